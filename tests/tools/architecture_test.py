#!/usr/bin/env python3
"""ARCHITECTURE.md holds, in three checks:
  - the folders' one-way dependencies, on every project #include:
      models/ <- hardware/ <- sim/engine/ <- sim/ <- calibrate/ <- tools/
    a file may include its own folder's headers and those of the folders to its left; sim/engine/ and sim/job/ are
    the sub-folders with boundaries of their own: the engine may not include the rest of sim/ (the scenario, the
    lowering, the report), the Job only the scenario-level headers it resolves (not the lowering, the search, the
    report or predict, which read it);
  - the Job (sim/job/job.h) is the one owner of the facts it derives: the lowering, the search, the report, predict
    and the validation report do not build a PipelineLayout or a RankLayout, pad the vocabulary, count micro-batches,
    pack documents or size the model state themselves;
  - every citation of it in the code (ARCHITECTURE.md "Section", ARCHITECTURE.md rule N) names a section heading or a
    house rule that exists, and no comment cites STYLE.md or DESIGN.md, which a clone does not contain.
Usage: architecture_test.py SOURCE_DIR"""
import os
import re
import sys

# Folder -> the folders its files may include (longest prefix wins).
ALLOWED = {
    "models/": ["models/"],
    "hardware/": ["models/", "hardware/"],
    "sim/engine/": ["models/", "hardware/", "sim/engine/"],
    "sim/job/": ["models/", "hardware/", "sim/job/", "sim/scenario.h", "sim/scenario_validate.h", "sim/pipeline_layout.h",
                 "sim/rank_layout.h", "sim/packing.h", "sim/pool_assignment.h"],
    "sim/": ["models/", "hardware/", "sim/"],
    "calibrate/": ["models/", "hardware/", "sim/", "calibrate/"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    matches = [f for f in ALLOWED if path.startswith(f)]
    return max(matches, key=len) if matches else None


# The readers of the Job, and what each would write to derive one of its facts again (comments aside).
READERS = ("sim/lower/", "sim/search/", "sim/report.h", "sim/report.cpp", "sim/predict.h", "sim/predict.cpp",
           "sim/validation.h", "sim/validation.cpp")
RE_DERIVED = [
    (re.compile(r"make_pipeline_layout\s*\("), "builds a PipelineLayout (read Job::layout())"),
    (re.compile(r"\bRankLayout\s*(\w+\s*)?[({]"), "builds a RankLayout (read Job::ranks())"),
    (re.compile(r"padded_vocab_size\s*\("), "pads the vocabulary (read Job::padded_vocab())"),
    (re.compile(r"num_microbatches\s*\("), "counts micro-batches (read Job::microbatches())"),
    (re.compile(r"global_batch_size\s*/"), "divides the global batch (read Job::microbatches())"),
    (re.compile(r"pack_documents\s*\("), "packs documents (read Job::packing())"),
    (re.compile(r"(?<![.\w])state_bytes\s*\("), "sizes the model state (read Job::state_bytes())"),
    (re.compile(r"\b(gemm|activation)_dtype\s*\([^)]*precision"), "maps the precision to a dtype (read the Job's)"),
]


def re_derived(root, problems):
    """No reader of the Job derives one of its facts itself. Returns the number of files checked."""
    checked = 0
    for top in ("sim",):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                path = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                if not name.endswith((".h", ".cpp")) or not path.startswith(READERS):
                    continue
                checked += 1
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        code = line.split("//", 1)[0]
                        for pattern, what in RE_DERIVED:
                            if pattern.search(code):
                                problems.append(f"{path}:{number}: {what}")
    return checked


SOURCES = (".h", ".cpp", ".cu", ".py", ".sh", ".txt")
SECTION = re.compile(r'ARCHITECTURE\.md\s+(?:"([^"]+)"|rule\s+(\d+))')
OUTSIDE = re.compile(r"\b(STYLE|DESIGN)\.md\b")


def citations(root, problems):
    """Every citation of ARCHITECTURE.md in the sources names something in it; none cites the brief's documents."""
    with open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    sections = set(re.findall(r"^## (.+)$", text, re.M))
    rules = set(re.findall(r"^(\d+)\. ", text[text.index("## House rules"):], re.M))
    cited = 0
    for top in ("models", "hardware", "sim", "calibrate", "tools", "tests"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith(SOURCES) or name == "architecture_test.py":
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    # Comments wrap: join the lines of a file so a citation split over two lines still reads.
                    body = re.sub(r"\n\s*(///|//|#)\s*", " ", f.read())
                for m in SECTION.finditer(body):
                    cited += 1
                    if m.group(1) and m.group(1) not in sections:
                        problems.append(f'{path}: cites ARCHITECTURE.md "{m.group(1)}", which has no such section')
                    if m.group(2) and m.group(2) not in rules:
                        problems.append(f"{path}: cites ARCHITECTURE.md rule {m.group(2)}, which has no such rule")
                for m in OUTSIDE.finditer(body):
                    problems.append(f"{path}: cites {m.group(0)}, which is not in the repository (cite ARCHITECTURE.md)")
    return cited


def main():
    root = sys.argv[1]
    problems, checked = [], 0
    for top in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".cu")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                if folder_of(path) != top:
                    continue  # a deeper folder with its own rule (sim/engine/ under sim/)
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue  # system and generated headers, and same-folder includes by bare name
                        checked += 1
                        target = m.group(1)
                        if not any(target.startswith(a) for a in ALLOWED[top]):
                            problems.append(f"{path}:{number}: includes {target}; {top} may include only "
                                            f"{', '.join(ALLOWED[top])}")
    cited = citations(root, problems)
    readers = re_derived(root, problems)
    for p in problems:
        print("FAIL:", p)
    print(f"architecture: {checked} includes, {cited} citations and {readers} readers of the Job checked, "
          f"{len(problems)} problem(s)")
    return 1 if problems or checked == 0 or cited == 0 or readers == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
