"""Ctrl-C during a long compile raises KeyboardInterrupt cleanly (in a child process, which gets
a real SIGINT while it compiles), and the process can compile and run afterwards."""
import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import os, signal, threading, time
    import numpy as np
    import stax

    # 200 distinct kernels, no disk cache: a compile of seconds even on an idle machine (each
    # kernel goes through Clang: 5-85 ms).
    g = stax.Graph()
    xs = [g.placeholder(f"x{i}", (4, 8 + i)) for i in range(200)]
    g.output([g.call("sum.dim_IntList", g.call("exp", x), [-1]) for x in xs])
    c = stax.Compiler({"devices": {"cpu": {"backend": "cpu_cpp"}}, "cache": False})

    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        c.compile(g)
        print("RESULT finished")
    except KeyboardInterrupt:
        print("RESULT interrupted after %.2f s" % (time.monotonic() - start))
    # Afterwards the same Compiler compiles and runs.
    small = stax.Graph()
    x = small.placeholder("x", (3,))
    small.output(small.call("relu", x))
    out = c.compile(small)(np.array([-1.0, 0.0, 2.0], np.float32))
    print("AFTER", out.tolist(), "threads", threading.active_count())
""")


def test_ctrl_c_during_a_compile_raises_keyboard_interrupt():
    pytest.importorskip("numpy")
    env = dict(os.environ)
    env.pop("STAX_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    assert lines["RESULT"].startswith("interrupted"), r.stdout
    # No helper thread is left behind: the timer thread has ended as well.
    assert lines["AFTER"] == "[0.0, 0.0, 2.0] threads 1", r.stdout
