#!/usr/bin/env python3
"""`orrery search` across processes: three --shard runs joined by `orrery search merge`, and, when an MPI launcher
is given, `mpirun -np 2 orrery search --mpi`, must rank the top ten plans exactly as the unsharded search does."""
import json
import os
import subprocess
import sys

SEARCH = ["search", "--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "16", "--seq-length", "2048",
          "--global-batch-size", "64", "--pp", "1,2", "--cp", "1,2", "--quiet"]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def ranking(path):
    with open(path) as f:
        return json.load(f)["ranking"][:10]


def main():
    orrery, work = sys.argv[1], sys.argv[2]
    mpiexec = sys.argv[3] if len(sys.argv) > 3 else ""
    whole = os.path.join(work, "search_whole.json")
    run([orrery, *SEARCH, "--json", whole])
    expected = ranking(whole)
    if len(expected) < 10:
        sys.exit(f"the unsharded search ranked only {len(expected)} plans")
    problems = []
    shards = []
    for i in range(3):
        shards.append(os.path.join(work, f"search_shard{i}.json"))
        run([orrery, *SEARCH, "--shard", f"{i}/3", "--json", shards[-1]])
    merged = os.path.join(work, "search_merged.json")
    run([orrery, "search", "merge", *shards, "--json", merged])
    if ranking(merged) != expected:
        problems.append(f"merged shards rank {ranking(merged)}, unsharded {expected}")
    if mpiexec:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        out = os.path.join(work, "search_mpi.json")
        r = subprocess.run([mpiexec, "--oversubscribe", "-np", "2", orrery, *SEARCH, "--mpi", "--json", out],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            problems.append(f"mpirun failed ({r.returncode}): {r.stderr[-500:]}")
        elif ranking(out) != expected:
            problems.append(f"MPI ranks {ranking(out)}, unsharded {expected}")
    print(f"search shards: top 10 {'matches' if not problems else 'differs'}"
          f"{' (3 shards merged' + (', 2 MPI ranks)' if mpiexec else ')')}")
    if problems:
        sys.exit("\n".join(problems))


if __name__ == "__main__":
    main()
