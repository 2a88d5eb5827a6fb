"""The Python package against baselines measured in the same run.

    /usr/bin/python3 bench/python_package_bench.py BUILD_DIR [SCRATCH_DIR] [RUNS]

BUILD_DIR is a Release build holding the package (BUILD_DIR/python), the
noop runner and bench/infer_round_trip_bench; SCRATCH_DIR (default
/tmp/carton-python-bench, about 3 GiB written there, removed at the end);
RUNS (default 5) timed runs per figure, of which the median is reported.

1. carton.safetensors.numpy.save_file of 1,000 float32 tensors (1 GiB in
   all) against `cp` of the file it wrote.
2. safe_open + get_tensor of every tensor of that file (zero-copy views)
   against numpy's own np.fromfile of the same bytes; and, to show what the
   views cost once used, the same with every page of every tensor touched
   against np.fromfile followed by the same touch.
3. Model.infer of a 4 MiB float32 tensor through the noop runner against
   the C++ client's round trip (bench/infer_round_trip_bench), rounds
   alternating between the two.

Every figure is a median over RUNS with the page cache warm; the load
average is printed at the end.
"""

import os
import shutil
import statistics
import subprocess
import sys
import time

TENSORS = 1000
FLOATS = (1 << 30) // TENSORS // 4  # 268,435 float32: 1,073,740 bytes each


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_of(runs, fn, before=None):
    times = []
    for _ in range(runs):
        if before:
            before()
        times.append(timed(fn))
    return statistics.median(times)


def touch_pages(arrays):
    # One byte of every 4 KiB page: reads the memory without computing on it.
    total = 0
    for a in arrays:
        b = a.reshape(-1).view(np.uint8)
        total += int(b[::4096].sum())
    return total


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    scratch = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "/tmp/carton-python-bench")
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    sys.path.insert(0, os.path.join(build, "python"))
    os.environ["CARTON_RUNNER_PATH"] = os.path.join(build, "runners", "noop")
    os.environ["CARTON_CACHE_DIR"] = os.path.join(scratch, "cache")

    global np
    import numpy as np

    import carton
    from carton.safetensors import safe_open
    from carton.safetensors.numpy import save_file

    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    try:
        rng = np.random.default_rng(1)
        tensors = {
            f"layer.{i:04d}.weight": rng.standard_normal(FLOATS, dtype=np.float32)
            for i in range(TENSORS)
        }
        path = os.path.join(scratch, "model.safetensors")
        copy = os.path.join(scratch, "copy.safetensors")
        save_file(tensors, path)  # warm-up: the file exists, its pages cached
        size = os.path.getsize(path)
        gib = size / (1 << 30)
        print(f"file: {size:,} bytes, {TENSORS} float32 tensors of {FLOATS * 4:,} bytes")

        written = os.path.join(scratch, "written.safetensors")

        def rm(p):
            if os.path.exists(p):
                os.unlink(p)

        # Each timed write goes to a new file, the old one removed untimed
        # (as bench/safetensors_bench.cc does), so neither side pays for
        # freeing 1 GiB of page cache.
        save = median_of(runs, lambda t=tensors: save_file(t, written),
                         lambda: rm(written))
        rm(written)
        cp = median_of(runs, lambda: subprocess.run(["cp", path, copy], check=True),
                       lambda: rm(copy))
        rm(copy)
        print(f"save_file        {save:7.3f} s  {gib / save:6.2f} GiB/s")
        print(f"cp               {cp:7.3f} s  {gib / cp:6.2f} GiB/s")
        print(f"save_file speed / cp speed: {cp / save:.2f} (target >= 0.9)")

        def open_all():
            with safe_open(path, framework="np") as f:
                return [f.get_tensor(k) for k in f.keys()]

        def open_all_touched():
            touch_pages(open_all())

        def fromfile():
            return np.fromfile(path, dtype=np.uint8)

        def fromfile_touched():
            touch_pages([fromfile()])

        reads = median_of(runs, open_all)
        base = median_of(runs, fromfile)
        reads_t = median_of(runs, open_all_touched)
        base_t = median_of(runs, fromfile_touched)
        print(f"safe_open + get_tensor x{TENSORS}   {reads * 1e3:8.2f} ms")
        print(f"np.fromfile                    {base * 1e3:8.2f} ms  {gib / base:6.2f} GiB/s")
        print(f"speed ratio (fromfile time / safe_open time): {base / reads:.1f} (target >= 1)")
        print(f"  with every page touched: safe_open {reads_t * 1e3:.2f} ms, "
              f"fromfile {base_t * 1e3:.2f} ms, ratio {base_t / reads_t:.2f}")
        del tensors
        os.unlink(path)

        model = os.path.join(scratch, "noop-model")
        os.makedirs(model)
        with open(os.path.join(model, "empty.txt"), "w"):
            pass
        packed = carton.pack(model, output=os.path.join(scratch, "noop.carton"),
                             runner_name="noop", required_framework_version=">=1")
        x = rng.standard_normal(1 << 20, dtype=np.float32)  # 4 MiB
        calls = 200
        bench = os.path.join(build, "bench", "infer_round_trip_bench")
        runner = os.path.join(build, "runners", "noop", "carton-runner-noop")
        py_medians, cpp_medians, ratios = [], [], []
        with carton.load(packed) as m:
            out = m.infer({"x": x})
            assert np.array_equal(out["x"], x)
            for _ in range(20):
                m.infer({"x": x})
            root = os.path.dirname(m.model_dir)
            print(f"Model.infer 4 MiB round trip, {calls} calls per round (median us per call)")
            print("round  C++ client  Model.infer  ratio")
            for r in range(runs):
                res = subprocess.run([bench, runner, root, str(calls)], check=True,
                                     capture_output=True, text=True)
                cpp = float(res.stdout.strip())
                times = []
                for _ in range(calls):
                    start = time.perf_counter()
                    m.infer({"x": x})
                    times.append((time.perf_counter() - start) * 1e6)
                py = statistics.median(times)
                py_medians.append(py)
                cpp_medians.append(cpp)
                ratios.append(py / cpp)
                print(f"{r + 1:<6d} {cpp:<11.1f} {py:<12.1f} {py / cpp:.2f}")
        print(f"median {statistics.median(cpp_medians):<11.1f} "
              f"{statistics.median(py_medians):<12.1f} {statistics.median(ratios):.2f} "
              f"(target <= 1.5)")
        with open("/proc/loadavg") as f:
            print("load average: " + " ".join(f.read().split()[:3]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
