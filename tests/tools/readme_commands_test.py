#!/usr/bin/env python3
"""Docs that cannot drift (issue 22): every command block of README.md and scenarios/README.md is run, and what
the files show a command printing is compared with what it prints.

What counts, in each file:
- A ```sh block holds commands, one a line (a line ending in a backslash goes on); `#` lines are comments. Each
  command runs in bash in a scratch folder holding a copy of scenarios/, in file order (a later command may read
  what an earlier one wrote), with `build/tools/orrery` and `./build/tools/orrery` replaced by the binary under
  test. It must exit 0. Every file it names after --csv, --json, --trace, --timeline, --out or --write must exist
  afterwards and not be empty.
- `#SBATCH --array=A-B` in a block makes each command that reads ${SLURM_ARRAY_TASK_ID} run once per array task,
  with that variable set, as Slurm would run it.
- `mpirun` is the MPI launcher CMake found, told (as the README says one must) through Open MPI's environment that
  it may run as root and start more ranks than there are cores.
- The commands that cannot run here are in NOT_RUN below, each with its reason; an entry that matches no command
  is an error, so the list cannot outlive the README. Nothing else is skipped, and a command that starts anything
  but orrery or mpirun, and is not in NOT_RUN, is an error rather than run.
- An output block is a ```text block right after a line `<!-- output of: COMMAND -->`, where COMMAND is a command of
  the nearest ```sh block above it, written whole or as the start of exactly one of them. The block's lines must be
  the command's stdout line for line, except that a line `...` stands for any number of lines (none included).
- A ```json block is a scenario: `orrery predict` must accept it, and when scenarios/examples/ holds a file of its
  `name`, the block must say what that file says (all but `source` and `notes`).
- Every other ```text block (a diagram, an illustration) is read by people only; a block that says nothing after
  its fence is an error, so that an output cannot hide in one untested.
Usage: readme_commands_test.py ORRERY SOURCE_DIR [MPIEXEC]"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

# Commands that this test does not run, with the reason. The key is the command as the file writes it, continuation
# lines joined with one space and a trailing comment left out. `stand_in` names files the command would write and
# the committed files that take their place for the commands after it.
MEASURED = "scenarios/measured/h200-2026-11-30"
NOT_RUN = {
    "tools/setup.sh": {"reason": "installs Debian packages and builds the tree: what CI does, not a test's work"},
    "tools/setup.sh --test": {"reason": "installs, builds, runs this whole suite and a sanitizer build: it is CI"},
    "cmake -S calibrate/cuda -B build-calibrate -G Ninja && cmake --build build-calibrate":
        {"reason": "needs the CUDA toolkit (nvcc) to build the GPU microbenchmarks"},
    "build-calibrate/orrery-calibrate --plan my.plan --out raw.json":
        {"reason": "runs cuBLASLt, memory kernels and NCCL on a GPU",
         "stand_in": {"raw.json": f"{MEASURED}/raw.json"}},
    "python3 tools/calibrate_attention.py --plan my.plan --out attention.json":
        {"reason": "times PyTorch's fused attention on a GPU",
         "stand_in": {"attention.json": f"{MEASURED}/attention.json"}},
    "python3 tools/calibrate_pytorch_kernels.py --out pytorch.json":
        {"reason": "times PyTorch's eager kernels on a GPU",
         "stand_in": {"pytorch.json": f"{MEASURED}/pytorch.json"}},
    "cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ "
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=\"-O1 -gline-tables-only\" -DORRERY_SANITIZE=ON -DORRERY_FUZZ=ON -DORRERY_MPI=OFF":
        {"reason": "configures a second, sanitizer build of the whole tree (tools/setup.sh --test runs it in CI)"},
    "cmake --build build-sanitize && ctest --test-dir build-sanitize -L sanitize":
        {"reason": "builds the whole tree again with clang under ASan/UBSan and runs its suite: tens of minutes"},
}
# Run only when MPI was built (CMake passes the launcher), else skipped with this reason.
MPI_REASON = "orrery was built without MPI (no MPI launcher given)"
# What a command may start with to be run: the binary under test, or MPI's launcher of it. Any other program (a
# script that installs or builds, say) is an error until NOT_RUN gives the reason it is not run, so a new or changed
# command never runs something unexpected, and is never skipped silently either.
RUNNABLE = {"build/tools/orrery", "./build/tools/orrery", "mpirun"}
OUTPUT_FLAGS = {"--csv", "--json", "--trace", "--timeline", "--out", "--write"}
TIMEOUT_S = 300

problems = []


def problem(where, what):
    problems.append(f"{where}: {what}")


class Block:
    def __init__(self, info, line, marker):
        self.info, self.line, self.marker, self.lines = info, line, marker, []


def read_blocks(path):
    """The fenced blocks of a Markdown file, each with its info string, first line number, output marker (the
    COMMAND of a `<!-- output of: COMMAND -->` line right before its fence, or None) and its lines."""
    blocks, current, previous = [], None, ""
    with open(path) as f:
        for number, text in enumerate(f.read().split("\n"), 1):
            if current is None and text.startswith("```"):
                m = re.fullmatch(r"<!-- output of: (.+?) -->", previous.strip())
                current = Block(text[3:].strip(), number, m.group(1) if m else None)
            elif current is not None and text.startswith("```"):
                blocks.append(current)
                current = None
            elif current is not None:
                current.lines.append(text)
            previous = text
    if current is not None:
        problem(f"{path}:{current.line}", "a block is not closed")
    return blocks


def without_comment(command):
    return re.sub(r"\s+#\s.*$", "", command).strip()


def commands_of(block):
    """(command, line number) for each command of a sh block, continuations joined; and the Slurm array's task ids."""
    out, pending, start, tasks = [], "", 0, None
    for offset, text in enumerate(block.lines):
        number = block.line + 1 + offset
        if not pending:
            start = number
            m = re.fullmatch(r"#SBATCH\s+--array=(\d+)-(\d+)\s*", text)
            if m:
                tasks = list(range(int(m.group(1)), int(m.group(2)) + 1))
            if not text.strip() or text.lstrip().startswith("#"):
                continue
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        out.append((re.sub(r"\s+", " ", (pending + text.strip())).strip(), start))
        pending = ""
    return out, tasks


def matches(shown, printed):
    """Whether `printed` (lines) is `shown` (lines, a `...` line standing for any number of lines); else the first
    shown line that could not be placed, and where."""
    segments, segment = [], []
    for line in shown:
        if line == "...":
            segments.append(segment)
            segment = []
        else:
            segment.append(line)
    segments.append(segment)
    first, last = segments[0], segments[-1]
    if printed[:len(first)] != first:
        bad = next((i for i, l in enumerate(first) if i >= len(printed) or printed[i] != l), 0)
        return False, f"line {bad + 1} shown as {first[bad]!r}, printed {printed[bad] if bad < len(printed) else None!r}"
    if len(segments) == 1:
        return (True, "") if len(printed) == len(first) else (False, f"printed {len(printed)} lines, shown {len(first)}")
    at = len(first)
    tail_start = len(printed) - len(last)
    for seg in segments[1:-1]:
        found = next((i for i in range(at, tail_start - len(seg) + 1) if printed[i:i + len(seg)] == seg), None)
        if found is None:
            return False, f"{seg[0]!r} (and the {len(seg) - 1} shown lines after it) not printed after line {at}"
        at = found + len(seg)
    if tail_start < at or printed[tail_start:] != last:
        return False, f"the printed output does not end with the shown lines starting {last[0]!r}" if last else ""
    return True, ""


def self_check():
    """The comparison can fail: a line changed, left out without `...`, or added at the end is caught."""
    printed = ["a", "b", "c", "d"]
    cases = [(["a", "...", "d"], True), (["a", "b", "c", "d"], True), (["a", "...", "c", "..."], True),
             (["a", "...", "b", "c", "d"], True), (["a", "c", "d"], False), (["a", "...", "x", "..."], False),
             (["a", "...", "c"], False), (["b", "...", "d"], False), (["a", "b", "c"], False)]
    for shown, want in cases:
        if matches(shown, printed)[0] != want:
            problem("self-check", f"{shown} against {printed}: {'no match' if want else 'a match'} expected")


def output_files(command, env):
    """Files a command names after an output flag (a following flag, as `predict --json --trace`, is no file)."""
    words = shlex.split(expand(command, env))
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w in OUTPUT_FLAGS and not words[i + 1].startswith("-")]


def expand(command, env):
    """$NAME and ${NAME} replaced from `env` (the others left as written)."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), m.group(0)), command)


class Runner:
    def __init__(self, orrery, source, mpiexec):
        self.orrery, self.source, self.mpiexec = orrery, source, mpiexec
        self.used_not_run = set()
        self.ran = self.skipped = self.compared = 0
        self.stdout = {}  # command -> stdout of its (last) run, for the output blocks

    def prepared(self, command):
        cmd = re.sub(r"(?<![\w./-])(?:\./)?build/tools/orrery(?![\w./-])", shlex.quote(self.orrery), command)
        if cmd.startswith("mpirun "):
            cmd = shlex.quote(self.mpiexec) + cmd[len("mpirun"):]
        return cmd

    def run_one(self, where, command, work, extra_env):
        env = dict(os.environ, **extra_env)
        started = time.monotonic()
        try:
            r = subprocess.run(["bash", "-c", self.prepared(command)], cwd=work, env=env, capture_output=True,
                               text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            problem(where, f"did not finish within {TIMEOUT_S} s: {command}")
            return None
        seconds = time.monotonic() - started
        task = f"  (array task {extra_env['SLURM_ARRAY_TASK_ID']})" if "SLURM_ARRAY_TASK_ID" in extra_env else ""
        print(f"  ran in {seconds:5.1f} s (exit {r.returncode}): {command}{task}")
        if r.returncode != 0:
            problem(where, f"exit {r.returncode} (0 expected): {command}\n    stderr: {r.stderr.strip()[-600:]}")
        for f in output_files(command, env):
            path = os.path.join(work, f)
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                problem(where, f"{f} was not written (or is empty): {command}")
        self.ran += 1
        return r.stdout

    def run_block(self, path, block, work):
        commands, tasks = commands_of(block)
        for command, number in commands:
            where = f"{os.path.relpath(path, self.source)}:{number}"
            key = without_comment(command)
            if key in NOT_RUN:
                self.used_not_run.add(key)
                self.skipped += 1
                entry = NOT_RUN[key]
                print(f"  not run ({entry['reason']}): {key}")
                for name, committed in entry.get("stand_in", {}).items():
                    shutil.copyfile(os.path.join(self.source, committed), os.path.join(work, name))
                    print(f"    {name}: the committed {committed} stands in for it")
                continue
            if shlex.split(key)[0] not in RUNNABLE:
                problem(where, f"runs {shlex.split(key)[0]}, which this test does not start: list it in NOT_RUN with "
                               f"its reason, or run orrery: {key}")
                continue
            if key.startswith("mpirun ") and not self.mpiexec:
                self.skipped += 1
                print(f"  not run ({MPI_REASON}): {key}")
                continue
            mpi_env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                       "OMPI_MCA_rmaps_base_oversubscribe": "1"} if key.startswith("mpirun ") else {}
            if "SLURM_ARRAY_TASK_ID" in command:
                if tasks is None:
                    problem(where, f"reads SLURM_ARRAY_TASK_ID but its block has no #SBATCH --array: {command}")
                    continue
                for task in tasks:
                    self.stdout[key] = self.run_one(where, command, work, {"SLURM_ARRAY_TASK_ID": str(task)})
            else:
                self.stdout[key] = self.run_one(where, command, work, mpi_env)

    def compare(self, path, block, sh_block):
        where = f"{os.path.relpath(path, self.source)}:{block.line}"
        if sh_block is None:
            problem(where, "an output block with no command block above it")
            return
        keys = [without_comment(c) for c, _ in commands_of(sh_block)[0]]
        named = [k for k in keys if k == block.marker] or [k for k in keys if k.startswith(block.marker)]
        if len(named) != 1:
            problem(where, f"'output of: {block.marker}' names {len(named)} commands of the block at line "
                           f"{sh_block.line} (one expected)")
            return
        printed = self.stdout.get(named[0])
        if printed is None:
            problem(where, f"shows the output of a command that was not run: {named[0]}")
            return
        ok, why = matches(block.lines, printed.split("\n")[:-1] if printed.endswith("\n") else printed.split("\n"))
        if not ok:
            problem(where, f"the output shown is not what `{named[0]}` prints: {why}")
        self.compared += 1

    def check_scenario(self, path, block, work):
        where = f"{os.path.relpath(path, self.source)}:{block.line}"
        try:
            doc = json.loads("\n".join(block.lines))
        except json.JSONDecodeError as e:
            problem(where, f"the JSON block does not parse: {e}")
            return
        file = os.path.join(work, f"block-{block.line}.json")
        with open(file, "w") as f:
            json.dump(doc, f)
        r = subprocess.run([self.orrery, "predict", file, "--json"], capture_output=True, text=True, timeout=TIMEOUT_S)
        if r.returncode != 0:
            problem(where, f"orrery predict refuses the JSON block: exit {r.returncode}: {r.stderr.strip()[:300]}")
        example = os.path.join(self.source, "scenarios", "examples", f"{doc.get('name')}.json")
        if os.path.exists(example):
            with open(example) as f:
                want = json.load(f)
            for key in sorted((set(doc) | set(want)) - {"source", "notes"}):
                if doc.get(key) != want.get(key):
                    problem(where, f"{key} is {json.dumps(doc.get(key))}, scenarios/examples/{doc['name']}.json says "
                                   f"{json.dumps(want.get(key))}")
        self.compared += 1

    def run_file(self, path):
        print(f"{os.path.relpath(path, self.source)}:")
        work = tempfile.mkdtemp(prefix="readme-commands-")
        try:
            shutil.copytree(os.path.join(self.source, "scenarios"), os.path.join(work, "scenarios"))
            sh_block = None
            for block in read_blocks(path):
                where = f"{os.path.relpath(path, self.source)}:{block.line}"
                if block.info in ("sh", "bash", "shell"):
                    self.run_block(path, block, work)
                    sh_block = block
                elif block.marker is not None:
                    if block.info != "text":
                        problem(where, f"an output block is fenced ```{block.info}, not ```text")
                    self.compare(path, block, sh_block)
                elif block.info == "json":
                    self.check_scenario(path, block, work)
                elif block.info != "text":
                    problem(where, f"a block fenced ```{block.info}: say what it is (sh, text, json)")
        finally:
            shutil.rmtree(work, ignore_errors=True)


def main():
    orrery, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    mpiexec = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else ""
    self_check()
    runner = Runner(orrery, source, mpiexec)
    started = time.monotonic()
    for name in ("README.md", os.path.join("scenarios", "README.md")):
        runner.run_file(os.path.join(source, name))
    for key in sorted(set(NOT_RUN) - runner.used_not_run):
        problem("NOT_RUN", f"names a command no file has (remove it): {key}")
    # Not vacuous: the README has commands to run and outputs to compare.
    if runner.ran == 0 or runner.compared == 0:
        problem("README.md", f"{runner.ran} commands run and {runner.compared} blocks compared: the blocks were not found")
    for p in problems:
        print(p)
    print(f"readme commands: {runner.ran} runs, {runner.skipped} commands not run (reasons above), "
          f"{runner.compared} blocks compared, {time.monotonic() - started:.1f} s; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
