"""Issue 28's findings against the stax binary, as an attacker (another local user) or a careless
user would meet them. Each test is a finding's must-fail test: run against main's build before the
fix (STAX_BIN=/work/main/build/bin/stax), it failed; tests/security/README.md lists the results.

  STAX_BIN=build/bin/stax STAX_SOURCE_DIR=. python3 tests/security/security_cli_test.py [-v]

The multi-user tests need a second uid: as root they give files to `nobody` (uid 65534) with
chown; without root and without another usable uid they skip, saying so. CI runs them as root.
"""
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cache_entries as ce  # noqa: E402

STAX = os.environ.get("STAX_BIN", "")
SOURCE = os.environ.get("STAX_SOURCE_DIR", os.path.join(HERE, "..", ".."))
EXAMPLE = os.path.join(SOURCE, "examples", "example_1_1.stax")
OTHER_UID = 65534  # nobody
IS_ROOT = os.geteuid() == 0
CC = shutil.which("clang") or shutil.which("cc")


def other_user_reason():
    if not IS_ROOT:
        return "needs root to give files to another uid (CI runs these tests as root)"
    return None


def run(args, env=None, timeout=300, cwd=None):
    e = dict(os.environ)
    e.pop("STAX_CACHE_DIR", None)
    e.pop("STAX_CACHE_MAX_BYTES", None)
    e.pop("STAX_CACHE_TRACE", None)
    e.update(env or {})
    for k in [k for k, v in e.items() if v is None]:
        del e[k]
    try:
        p = subprocess.run([STAX] + args, capture_output=True, env=e, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return -999, "", "timed out after %d s" % timeout
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def chown_tree(path, uid):
    os.lchown(path, uid, uid)
    for d, dirs, files in os.walk(path):
        for n in dirs + files:
            os.lchown(os.path.join(d, n), uid, uid)


def compile_c(src, out, shared=False):
    if not CC:
        raise unittest.SkipTest("no C compiler (clang or cc) to build the attacker's code")
    c = out + ".c"
    with open(c, "w") as f:
        f.write(src)
    cmd = [CC, "-O1", "-fPIC", "-o", out, c] + (["-shared"] if shared else ["-c"])
    subprocess.run(cmd, check=True, capture_output=True)
    return ce.read_bytes(out) if not shared else out


class StaxTest(unittest.TestCase):
    def setUp(self):
        if not STAX or not os.path.exists(STAX):
            self.fail("STAX_BIN must name the stax binary")
        self.dir = tempfile.mkdtemp(prefix="stax_security_")
        os.chmod(self.dir, 0o755)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, name, text, mode=None):
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        if mode is not None:
            os.chmod(p, mode)
        return p

    def config(self, extra="", name="cfg.yaml"):
        return self.write(name, "plugin_path: []\ndevices: {cpu: {backend: cpu_cpp}}\n" + extra)

    def populate(self, cache):
        """Runs Example 1.1 through a cache at `cache` (as this user); returns its entries."""
        code, out, err = run(["run", EXAMPLE, "--config", self.config(), "--check"],
                             {"STAX_CACHE_DIR": cache})
        self.assertEqual(code, 0, out + err)
        return ce.entries(cache)


class CacheTrust(StaxTest):
    """Findings 1 and 2: the kernel cache."""

    def test_cache_of_another_user_is_not_used(self):
        if other_user_reason():
            self.skipTest(other_user_reason())
        cache = self.path("shared", "cache")
        self.assertTrue(self.populate(cache))
        chown_tree(self.path("shared"), OTHER_UID)  # now another user's directory
        code, out, err = run(["run", EXAMPLE, "--config", self.config(), "--check"],
                             {"STAX_CACHE_DIR": cache, "STAX_CACHE_TRACE": "1"})
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("from disk", err)  # nothing of the other user's directory was loaded
        self.assertIn("is owned by uid %d, not by you" % OTHER_UID, err)
        self.assertEqual(err.count("warning: kernel cache"), 1, err)

    def test_group_or_world_writable_cache_is_not_used(self):
        cache = self.path("open")
        self.assertTrue(self.populate(cache))
        os.chmod(cache, 0o777)
        code, out, err = run(["run", EXAMPLE, "--config", self.config(), "--check"],
                             {"STAX_CACHE_DIR": cache, "STAX_CACHE_TRACE": "1"})
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("from disk", err)
        self.assertIn("writable by group or others (mode 0777)", err)

    def test_planted_entry_runs_no_code_of_another_user(self):
        """The attack of finding 1: another user owns the directory a victim's STAX_CACHE_DIR
        names and plants an entry, sealed as well as that user can, whose object calls
        system(). Before the fix the victim ran it and exited 0 with wrong outputs."""
        if other_user_reason():
            self.skipTest(other_user_reason())
        marker = self.path("pwned")
        evil = compile_c('extern int system(const char*);\n'
                         'void stax_entry(void* const* b, long long s, long long e, void* f) '
                         '{ system("touch %s"); }\n' % marker, self.path("evil.o"))
        cache = self.path("tmp_shared", "cache")
        entries = self.populate(cache)  # the attacker's own run: the right names and keys
        for p in entries:
            magic, key, payload = ce.read_entry(p)
            names, source, _ = ce.cpu_fields(payload)
            ce.write_entry(p, magic, key, ce.cpu_payload(names, source, evil), cache)
        chown_tree(self.path("tmp_shared"), OTHER_UID)
        code, out, err = run(["run", EXAMPLE, "--config", self.config(), "--check"],
                             {"STAX_CACHE_DIR": cache})
        self.assertFalse(os.path.exists(marker), "the planted object code ran")
        self.assertEqual(code, 0, out + err)
        self.assertIn("agree with the reference interpreter", out)

    def test_entries_of_another_user_are_skipped(self):
        if other_user_reason():
            self.skipTest(other_user_reason())
        cache = self.path("mine")
        entries = self.populate(cache)
        for p in entries:
            os.lchown(p, OTHER_UID, OTHER_UID)
        code, out, err = run(["run", EXAMPLE, "--config", self.config(), "--check"],
                             {"STAX_CACHE_DIR": cache, "STAX_CACHE_TRACE": "1"})
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("from disk", err)
        self.assertIn("skipped", err)

    def test_cache_directories_are_private(self):
        cache = self.path("a", "b", "cache")
        entries = self.populate(cache)
        for d in (self.path("a"), self.path("a", "b"), cache, os.path.join(cache, "kernels")):
            self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o700, d)
        for p in entries:
            self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o600, p)

    def test_clear_never_follows_a_link(self):
        """Finding 2: <cache>/kernels a link to another directory: `stax cache clear` deleted
        the *.entry / *.src files there, and stores wrote there."""
        victim = self.path("victim")
        os.makedirs(victim)
        for n in ("notes.entry", "paper.src"):
            self.write(os.path.join("victim", n), "precious")
        cache = self.path("cache")
        os.makedirs(cache, mode=0o700)
        os.symlink(victim, os.path.join(cache, "kernels"))
        code, out, err = run(["cache", "clear", "--config", self.config()],
                             {"STAX_CACHE_DIR": cache})
        self.assertEqual(sorted(os.listdir(victim)), ["notes.entry", "paper.src"])
        self.assertNotEqual(code, 0, out + err)
        self.assertIn("symbolic link", err)
        code, out, err = run(["run", EXAMPLE, "--config", self.config()],
                             {"STAX_CACHE_DIR": cache})
        self.assertEqual(code, 0, out + err)
        self.assertEqual(sorted(os.listdir(victim)), ["notes.entry", "paper.src"])

    def test_fifo_entry_neither_hangs_nor_counts(self):
        """Finding 2: a FIFO named like an entry hung `stax run` in open(), and `cache stats`
        reported 2^64-1 bytes."""
        cache = self.path("cache")
        entries = self.populate(cache)
        for p in entries:
            os.unlink(p)
            os.mkfifo(p, 0o600)
        code, out, err = run(["run", EXAMPLE, "--config", self.config(), "--check"],
                             {"STAX_CACHE_DIR": cache, "STAX_CACHE_TRACE": "1"}, timeout=120)
        self.assertNotEqual(code, -999, "stax run hung on a FIFO in the cache")
        self.assertEqual(code, 0, out + err)
        for p in entries:  # a store replaced the FIFO by a rename, never writing through it
            self.assertTrue(stat.S_ISREG(os.lstat(p).st_mode), p)
            os.unlink(p)
            os.mkfifo(p, 0o600)
        code, out, err = run(["cache", "stats", "--config", self.config()],
                             {"STAX_CACHE_DIR": cache}, timeout=60)
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("18446744073709551615", out)
        self.assertIn("entries: 0\n", out)

    def _reseal_object(self, edit):
        """Populates a private cache, applies edit(object) -> object to every entry, sealed
        with the cache's own key (what only its owner can do): only cpu_cpp's object check can
        refuse it."""
        cache = self.path("cache")
        for p in self.populate(cache):
            magic, key, payload = ce.read_entry(p)
            names, source, obj = ce.cpu_fields(payload)
            ce.write_entry(p, magic, key, ce.cpu_payload(names, source, edit(obj)), cache)
        return run(["run", EXAMPLE, "--config", self.config(), "--check"],
                   {"STAX_CACHE_DIR": cache, "STAX_CACHE_TRACE": "1"})

    def test_object_for_another_machine_is_refused_and_rebuilt(self):
        """Finding 1: an aarch64 object with a valid checksum crashed the process."""
        def aarch64(obj):
            return obj[:18] + (183).to_bytes(2, "little") + obj[20:]  # e_machine = EM_AARCH64
        code, out, err = self._reseal_object(aarch64)
        self.assertEqual(code, 0, out + err)
        self.assertIn("another machine", err)
        self.assertIn("compiled", err)

    def test_entry_symbol_that_is_data_is_refused_and_rebuilt(self):
        """Finding 1: a data symbol as the entry point crashed the process."""
        data = compile_c("char stax_entry[256] = {1};\n", self.path("data.o"))
        code, out, err = self._reseal_object(lambda obj: data)
        self.assertEqual(code, 0, out + err)
        self.assertIn("is not a function", err)


class Outputs(StaxTest):
    """Finding 3: --save."""

    def test_save_never_writes_through_a_link(self):
        victim = self.write("victim.txt", "precious\n")
        out_dir = self.path("out")
        os.makedirs(out_dir)
        os.symlink(victim, os.path.join(out_dir, "out0.npy"))
        code, out, err = run(["run", EXAMPLE, "--save", out_dir])
        self.assertEqual(code, 0, out + err)
        self.assertEqual(ce.read_bytes(victim), b"precious\n")
        self.assertTrue(stat.S_ISREG(os.lstat(os.path.join(out_dir, "out0.npy")).st_mode))

    def test_stale_outputs_are_removed(self):
        three = self.write("three.stax", """graph(
    %x shape=(4,) = placeholder[target=x]
    %a = call_function[target=aten.relu.default](args = (%x,), kwargs = {})
    %b = call_function[target=aten.neg.default](args = (%x,), kwargs = {})
    %c = call_function[target=aten.exp.default](args = (%x,), kwargs = {})
    return (a, b, c)
)
""")
        out_dir = self.path("out")
        self.assertEqual(run(["run", three, "--save", out_dir])[0], 0)
        self.assertEqual(sorted(os.listdir(out_dir)), ["out0.npy", "out1.npy", "out2.npy"])
        self.write("out/notes.txt", "mine\n")
        code, out, err = run(["run", EXAMPLE, "--save", out_dir])
        self.assertEqual(code, 0, out + err)
        self.assertEqual(sorted(os.listdir(out_dir)), ["notes.txt", "out0.npy"])
        self.assertIn("removed 2 stale output(s) of an earlier run: out1.npy out2.npy", out)


class Environment(StaxTest):
    """Finding 4: HOME unset."""

    def test_home_unset_uses_the_passwd_home(self):
        import pwd
        home = pwd.getpwuid(os.getuid()).pw_dir
        cfg = self.config("cache_dir: ~/.cache/stax\n")
        code, out, err = run(["cache", "path", "--config", cfg], {"HOME": None})
        self.assertEqual(code, 0, out + err)
        self.assertEqual(out.strip(), os.path.join(home, ".cache", "stax"))
        self.assertFalse(os.path.exists(self.path("~")))

    def test_cache_dir_default_follows_xdg(self):
        cfg = self.config("cache_dir: default\n")
        code, out, err = run(["cache", "path", "--config", cfg],
                             {"XDG_CACHE_HOME": self.path("xdg")})
        self.assertEqual(code, 0, out + err)
        self.assertEqual(out.strip(), self.path("xdg", "stax"))
        code, out, err = run(["cache", "path", "--config", cfg],
                             {"XDG_CACHE_HOME": None, "HOME": self.path("home")})
        self.assertEqual(out.strip(), self.path("home", ".cache", "stax"))


class Plugins(StaxTest):
    """Finding 5."""

    def test_plugin_planted_by_another_user_never_runs(self):
        if other_user_reason():
            self.skipTest(other_user_reason())
        marker = self.path("constructor_ran")
        shared = self.path("project")
        os.makedirs(shared)
        compile_c('#include <stdio.h>\n__attribute__((constructor)) static void pwn(void) '
                  '{ fclose(fopen("%s", "w")); }\n' % marker,
                  os.path.join(shared, "libstax_cpu_cpp.so"), shared=True)
        cfg = os.path.join(shared, "cfg.yaml")
        with open(cfg, "w") as f:
            f.write("plugin_path: [.]\ndevices: {cpu: {backend: cpu_cpp}}\n")
        chown_tree(shared, OTHER_UID)
        code, out, err = run(["run", EXAMPLE, "--config", cfg])
        self.assertFalse(os.path.exists(marker), "the planted library's constructor ran")
        self.assertNotEqual(code, 0, out + err)
        self.assertIn(os.path.join(shared, "libstax_cpu_cpp.so"), err)
        self.assertIn("owned by uid %d" % OTHER_UID, err)

    def test_plugins_lists_full_paths_and_the_built_in_directory(self):
        code, out, err = run(["plugins", "--config", self.config()])
        self.assertEqual(code, 0, out + err)
        self.assertIn("built in: this build's plugin directory, always searched last", out)
        self.assertIn("loaded with:", out)
        lines = [l.strip() for l in out.splitlines() if l.startswith("  cpu_cpp  ")]
        self.assertEqual(len(lines), 1, out)
        path = lines[0].split("  ", 1)[1]
        self.assertEqual(path, os.path.realpath(path))


class Verifier(StaxTest):
    """Finding 7 (tests/meta/meta_differential.py checks every op; this is the named case)."""

    def test_conv2d_bias_of_the_wrong_shape_is_rejected(self):
        g = self.write("conv.stax", """graph(
    %x shape=(1, 2, 8, 8) = placeholder[target=x]
    %w shape=(3, 2, 3, 3) = placeholder[target=w]
    %b shape=(1000000000,) = placeholder[target=b]
    %y = call_function[target=aten.conv2d.default](args = (%x, %w, %b), kwargs = {})
    return (y,)
)
""")
        code, out, err = run(["check", g], timeout=60)
        self.assertEqual(code, 1, out + err)
        self.assertIn("bias (1000000000,) must have shape (3,)", err)


class SmallerItems(StaxTest):
    """Finding 8."""

    def test_huge_option_value_is_not_echoed(self):
        cfg = self.write("big.yaml", "plugin_path: []\ndevices: {cpu: {backend: cpu_cpp, "
                                     "options: {opt_level: '" + "7" * (50 << 20) + "'}}}\n")
        code, out, err = run(["run", EXAMPLE, "--config", cfg])
        self.assertEqual(code, 1, err[:500])
        self.assertLess(len(err), 4096, err[:500])
        self.assertIn("(52428800 bytes)", err)

    def test_negative_cache_size_is_an_error(self):
        for bad in ("-5", "0", "12X", "1.5G", "99999999999999999999"):
            code, out, err = run(["cache", "stats", "--config", self.config()],
                                 {"STAX_CACHE_MAX_BYTES": bad, "STAX_CACHE_DIR": self.path("c")})
            self.assertEqual(code, 1, bad + ": " + out + err)
            self.assertIn("STAX_CACHE_MAX_BYTES", err)
        code, out, err = run(["cache", "stats", "--config", self.config()],
                             {"STAX_CACHE_MAX_BYTES": "64M", "STAX_CACHE_DIR": self.path("c")})
        self.assertEqual(code, 0, out + err)
        self.assertIn("(limit 67108864)", out)

    def test_seed_out_of_range_is_a_usage_error(self):
        for bad in ("-1", "1e23", "18446744073709551616", "0x10", ""):
            code, out, err = run(["run", EXAMPLE, "--seed", bad])
            self.assertEqual(code, 2, "--seed %r: %s" % (bad, out + err))
        code, out, err = run(["run", EXAMPLE, "--seed", "18446744073709551615"])
        self.assertEqual(code, 0, out + err)
        self.assertIn("seed 18446744073709551615", out)

    def test_grad_check_accepts_agreeing_nans(self):
        g = self.write("nan.stax", """graph(
    %x shape=(8,) = placeholder[target=x]
    %l = call_function[target=aten.log.default](args = (%x,), kwargs = {})
    %s = call_function[target=aten.sum.default](args = (%l,), kwargs = {})
    return (s,)
)
""")
        code, out, err = run(["grad", g, "--wrt", "x", "--check", "--seed", "3"])
        self.assertIn("out0 s: float32() nan=1 [nan]", out)
        self.assertIn("check against the interpreter's joint graph: ok", out)
        self.assertEqual(code, 0, out + err)

    def test_grad_check_judges_bfloat16_by_its_precision(self):
        """bfloat16 has 8 significant bits: compiled and interpreted softmax differ by about
        one of its units in the last place, which a flat 1e-4 called a MISMATCH."""
        g = self.write("bf16.stax", """graph(
    %x shape=(64, 96) dtype=bfloat16 = placeholder[target=x]
    %y = call_function[target=aten.softmax.int](args = (%x, 1), kwargs = {})
    return (y,)
)
""")
        code, out, err = run(["grad", g, "--wrt", "x", "--check"])
        self.assertIn("check against the interpreter's joint graph: ok", out)
        self.assertIn("0.01 + 0.016 |ref| (bfloat16)", out)
        self.assertEqual(code, 0, out + err)


if __name__ == "__main__":
    unittest.main()
