#!/usr/bin/env python3
"""CPU time per thread of a command and of every process it starts.

    python3 bench/thread_profile.py [--interval 0.02] [--out FILE] -- CMD ARGS...

Runs CMD, and every INTERVAL seconds reads /proc/<pid>/task/<tid>/stat of
the command's process and of its descendants (found through
/proc/<pid>/task/<tid>/children, or through the parent pid in /proc/*/stat
where the kernel lacks that file). For each thread (pid, tid) it keeps its
name (the comm field of stat, the same text as task/<tid>/comm) and the
last utime + stime seen. When the command exits it prints the wall time,
the CPU time of the command and its descendants (from wait4, exact), the
sum over the sampled threads, and a table of the threads by CPU seconds
with each one's share of the wall time (busy %; the main thread of a
process has tid = pid); threads under 1% of the sampled sum are grouped
in one "other (N threads)" row.

Sampling, not tracing: a thread's CPU time after its last sample is lost
(at most one interval of it), and a thread or process that lives less
than one interval may be missed altogether. Compare the sampled sum with
the exact total to see how much was missed.

The report goes to stderr, or to FILE with --out (--out - for stdout).
The exit status is the command's (128 + N when signal N ended it; 127
when it cannot be started).
Standard library only; Python 3.9 or later, Linux.
"""

import argparse
import os
import signal
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:  # the thread or process ended meanwhile
        return None


def parse_stat(text):
    """(name, ppid, cpu ticks) of one /proc stat line."""
    head, _, tail = text.rpartition(")")
    name = head.partition("(")[2]
    fields = tail.split()
    # fields[0] is field 3 (state) of proc(5): ppid is 4, utime 14, stime 15.
    return name, int(fields[1]), int(fields[11]) + int(fields[12])


def tasks(pid):
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def children_by_scan():
    """Map of parent pid -> child pids, from every /proc/<pid>/stat."""
    kids = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            text = read_text(f"/proc/{entry}/stat")
            if text:
                kids.setdefault(parse_stat(text)[1], []).append(int(entry))
    return kids


def descendants(root, use_children_file):
    """The root pid and every live process under it."""
    kids = None if use_children_file else children_by_scan()
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        if kids is not None:
            todo.extend(kids.get(pid, []))
            continue
        for tid in tasks(pid):
            text = read_text(f"/proc/{pid}/task/{tid}/children")
            if text:
                todo.extend(int(c) for c in text.split())
    return seen


def sample(root, use_children_file, threads):
    """Updates threads[(pid, tid)] = [name, ticks] with what /proc shows now."""
    for pid in descendants(root, use_children_file):
        for tid in tasks(pid):
            text = read_text(f"/proc/{pid}/task/{tid}/stat")
            if text:
                name, _, ticks = parse_stat(text)
                threads[(pid, int(tid))] = [name, ticks]


def exited(pid):
    """True once pid has ended; it stays a zombie (not reaped) for a last sample."""
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return info is not None and info.si_pid == pid


def busy(cpu, wall):
    return 100 * cpu / wall if wall > 0 else 0.0


def report(wall, cpu_exact, threads):
    rows = sorted(((t / TICK, name, pid, tid) for (pid, tid), (name, t) in threads.items()),
                  reverse=True)
    sampled = sum(r[0] for r in rows)
    main = [r for r in rows if sampled > 0 and r[0] >= 0.01 * sampled]
    rest = rows[len(main):]
    lines = [
        f"wall: {wall:.3f} s",
        f"cpu: {cpu_exact:.3f} s ({busy(cpu_exact, wall) / 100:.2f} cores; "
        f"sampled threads: {sampled:.3f} s in {len(rows)} threads)",
        f"{'thread':<24} {'pid':>8} {'tid':>8} {'cpu s':>9} {'busy %':>7}",
    ]
    for cpu, name, pid, tid in main:
        lines.append(f"{name:<24} {pid:>8} {tid:>8} {cpu:>9.3f} {busy(cpu, wall):>7.1f}")
    if rest:
        cpu = sum(r[0] for r in rest)
        label = f"other ({len(rest)} threads)"
        lines.append(f"{label:<24} {'-':>8} {'-':>8} {cpu:>9.3f} {busy(cpu, wall):>7.1f}")
    return "\n".join(lines) + "\n"


def parse_args(argv):
    if "--" not in argv:
        sys.exit("usage: thread_profile.py [--interval S] [--out FILE] -- CMD ARGS...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="thread_profile.py")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between samples")
    parser.add_argument("--out", default=None, help="write the report here (- for stdout)")
    args = parser.parse_args(argv[:split])
    args.command = argv[split + 1:]
    if not args.command or args.interval <= 0:
        parser.error("a command after -- and a positive --interval are needed")
    return args


def main():
    args = parse_args(sys.argv[1:])
    use_children_file = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    start = time.monotonic()
    try:
        pid = os.posix_spawnp(args.command[0], args.command, os.environ)
    except OSError as e:
        print(f"thread_profile: cannot run {args.command[0]}: {e.strerror}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _: os.kill(pid, s))
    threads = {}
    while True:
        done = exited(pid)
        sample(pid, use_children_file, threads)
        if done:
            break
        time.sleep(args.interval)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - start
    text = report(wall, usage.ru_utime + usage.ru_stime, threads)
    if args.out == "-":
        sys.stdout.write(text)
    elif args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stderr.write(text)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
