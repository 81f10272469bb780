# SPDX-License-Identifier: GPL-2.0
"""The guests of the selftests command (selftests_step.py): the kernel they
boot, the initramfs they share, their command lines, the choice of guests
and tests, kselftest's tree and the /init; apt's resolution of the guests'
roots and paths through their symlinks (guest_root.py); and blkctx.sh's
apt_update and guest_apt_ready."""

import contextlib
import io
import os
import re
import sys

import guest_root
import selftests_step
import support

# selftests_step as "st" on a scratch tree whose x86_64 KUnit kernel was
# built from the tree as it is, with stand-ins for what needs a kernel: the
# targets, the options, QEMU's parameters, an initramfs build that prints
# "built", and a judge that passes; "base" the settings of a plain run,
# "run" a function as a command's main
GUESTS = """import os, sys
import common, guest, qemu_params, selftests_step as st
common.tree_current = lambda: None
common.report = lambda *counts: None
st.targets = lambda spec, tree=None: [('block', sys.argv[1])]
st.missing_kconfig = lambda config, arch, directories: []
qemu_params.load = lambda tree, config: qemu_params.QemuParams(
    'qemu', 'arch/x86/boot/bzImage', 'console=ttyS0', 'stdio', [])
def make_initramfs(arch, out, settings, guest_dir=None):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        f.write('initramfs for ' + arch)
    print('built', flush=True)
st.make_initramfs = make_initramfs
st.judged = lambda *args: st.Counts(1, 0, 0)
base = st.Settings('kunit', 900, 120, 'block', '', '1', 'user=1', [])
def run(function, *args):
    return common.run_command('step', lambda: function(*args) or 0)
"""


def guests(top, code, *args, env=None):
    """python3 CODE (after GUESTS) with ARGS on the scratch tree of
    support.scratch_tree(TOP): its output and errors, then "status N" for
    a status other than 0."""
    kdir = os.path.join(top, "cache", "build", "kunit-x86_64")
    os.makedirs(os.path.join(kdir, "arch", "x86", "boot"), exist_ok=True)
    open(os.path.join(kdir, "arch", "x86", "boot", "bzImage"), "w").close()
    state = support.run([sys.executable, "-B", os.path.join(support.LIB, "common.py"), "state",
                         os.path.join(top, "cache", "linux")], split=True)
    with open(os.path.join(kdir, ".blkctx-tree"), "w") as f:
        f.write(state.out)
    environ = {"BLKCTX_CACHE": os.path.join(top, "cache"), "TMPDIR": top}
    environ.update(env or {})
    done = support.python(GUESTS + code, top, *args, env=environ)
    return done.text()


def without(pattern, text):
    """TEXT without its lines that match PATTERN (grep -v), as $(...) has it."""
    return "\n".join(line for line in text.splitlines() if not re.search(pattern, line))


def captured(function, *args, errors=True):
    """What FUNCTION(*ARGS) prints, its standard error too unless not
    ERRORS (then left out, as 2>/dev/null does), and what it returns."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(out if errors else io.StringIO()):
        value = function(*args)
    return out.getvalue(), value


class Selftests(support.Case):
    """The guests of the selftests command, their kernels, roots and initramfs."""

    def tree(self):
        return support.scratch_tree(self.path("guests"))

    def test_stale_kernel(self):
        """guest: a kernel built from another state of the tree is refused"""
        t = self.tree()
        out = guests(t, '''guest.boot_guest = lambda *args: print("booted") or 0
with open(os.path.join(common.TREE, "a.c"), "a") as f:
    f.write("change\\n")
print(*st.run_guest("x86_64", base, st.GUESTS[0]))''')
        self.same("guest: a kernel built from another state of the tree is refused",
                  "was not built from the tree as it is now\n0 1 0",
                  "\n".join(re.findall(
                      "^0 1 0|^booted|was not built from the tree as it is now", out, re.M)))

    def test_one_initramfs(self):
        """selftests: one initramfs per architecture, each guest's command line"""
        t = self.tree()
        # built by the first guest to boot (the first boots the cache's, the
        # others a copy of their own, which is gone at the end: another run
        # may build the cache's again)
        out = guests(t, '''import glob
def boot(arch, tree, config, kernel, initrd, append, log, *rest):
    print("booted", os.path.basename(log), open(initrd).read(),
          "(copy):" if os.path.basename(initrd).startswith("blkctx-initramfs.") else "(cache):",
          append.split(" ", 3)[3], flush=True)
    return 0
guest.boot_guest = boot
st.GUESTS = [st.Guest("main"), st.Guest("one", "1", "", "block"),
             st.Guest("two", "0", "mmc_emu.cqe=1 x=2", "block")]
print("status", run(st.command_selftests, ["x86_64"], base))
print("left:", glob.glob(sys.argv[1] + "/blkctx-initramfs.*"))''')
        out = re.sub(r" \(initramfs [0-9]*s, boot and run [0-9]*s\)$", "",
                     without("^blkctx: selftests: booting", out), flags=re.M)
        self.same("selftests: one initramfs per architecture, each guest's command line",
                  "built\n"
                  "booted selftests-x86_64.log initramfs for x86_64 (cache): "
                  "mmc_core.contexts=1 user=1\n"
                  "selftests: x86_64: 1 passed, 0 failed, 0 skipped\n"
                  "booted selftests-x86_64-one.log initramfs for x86_64 (copy): "
                  "mmc_core.contexts=1 user=1 blkctx.tests=block\n"
                  "selftests: x86_64: 1 passed, 0 failed, 0 skipped\n"
                  "booted selftests-x86_64-two.log initramfs for x86_64 (copy): "
                  "mmc_core.contexts=0 mmc_emu.cqe=1 x=2 user=1 blkctx.tests=block\n"
                  "selftests: x86_64: 1 passed, 0 failed, 0 skipped\n"
                  "selftests: 3 passed, 0 failed, 0 skipped\n"
                  "status 0\n"
                  "left: []", out)

    def test_choice(self):
        """selftests: BLKCTX_GUESTS and BLKCTX_SELFTESTS choose guests and tests"""
        t = self.tree()
        # BLKCTX_GUESTS picks guests (the first picked builds the initramfs),
        # BLKCTX_SELFTESTS replaces their tests, an unknown guest is refused,
        # a failure of one guest fails the command
        out = guests(t, '''def boot(arch, tree, config, kernel, initrd, append, log, *rest):
    print("booted", os.path.basename(log), append.split("blkctx.tests=")[-1], flush=True)
    return 0
guest.boot_guest = boot
st.GUESTS = [st.Guest("main"), st.Guest("one", "1", "", "block"),
             st.Guest("two", "0", "", "block"), st.Guest("three", "1", "", "mmc")]
for guests, tests in (("two,three", ""), ("three", "block:x"), ("main,four", "")):
    os.environ.update(BLKCTX_GUESTS=guests, BLKCTX_SELFTESTS=tests)
    print("status", run(st.command_selftests, ["x86_64"], st.Settings.from_environment()))
st.judged = lambda *args: st.Counts(1, 1, 0)
print("status", run(st.command_selftests, ["x86_64"], base._replace(guests=["one"])))''')
        self.same("selftests: BLKCTX_GUESTS and BLKCTX_SELFTESTS choose guests and tests",
                  "built\n"
                  "booted selftests-x86_64-two.log block\n"
                  "booted selftests-x86_64-three.log mmc\n"
                  "selftests: 2 passed, 0 failed, 0 skipped\n"
                  "status 0\n"
                  "built\n"
                  "booted selftests-x86_64-three.log block:x\n"
                  "selftests: 1 passed, 0 failed, 0 skipped\n"
                  "status 0\n"
                  'blkctx: error: BLKCTX_GUESTS: no guest "four"; the guests are: '
                  "main,one,two,three\n"
                  "status 1\n"
                  "built\n"
                  "booted selftests-x86_64-one.log block\n"
                  "selftests: 1 passed, 1 failed, 0 skipped\n"
                  "status 1",
                  without(r"^blkctx: selftests: booting|^selftests: x86_64", out))

    def test_make_src(self):
        """selftests: the tree through symlinks, a target from outside copied in"""
        t = self.tmp
        # kselftest builds the targets in the tree seen through symlinks, with
        # a target from outside copied in; dot files only above selftests/
        for d in ("src/tools/perf", "src/tools/testing/foo", "src/tools/testing/selftests/block",
                  "out"):
            os.makedirs(self.path(d))
        for name in ("src/Makefile", "src/tools/.x", "src/tools/testing/selftests/lib.mk",
                     "src/tools/testing/selftests/.hidden",
                     "src/tools/testing/selftests/block/Makefile", "out/Makefile"):
            self.write(name, "")
        tree = self.path("src")
        # what it says of the copy is not the case's
        said, selftests = captured(selftests_step.make_src, tree, self.path("farm"), [
            ("block", tree + "/tools/testing/selftests/block"), ("demo", self.path("out"))],
            errors=False)
        found = []
        for top, dirs, files in os.walk(self.path("farm")):
            for name in dirs + files:
                path = os.path.join(top, name)
                kind = "l" if os.path.islink(path) else "d" if os.path.isdir(path) else "f"
                found.append("%s %s" % (os.path.relpath(path, self.path("farm")), kind))
        self.same("selftests: the tree through symlinks, a target from outside copied in",
                  "farm/tools/testing/selftests\n"
                  "Makefile l\n"
                  "tools d\n"
                  "tools/.x l\n"
                  "tools/perf l\n"
                  "tools/testing d\n"
                  "tools/testing/foo l\n"
                  "tools/testing/selftests d\n"
                  "tools/testing/selftests/block l\n"
                  "tools/testing/selftests/demo d\n"
                  "tools/testing/selftests/demo/Makefile f\n"
                  "tools/testing/selftests/lib.mk l",
                  said + "\n".join([selftests[len(t) + 1:]] + sorted(found, key=os.fsencode)))

    def test_pack(self):
        """selftests: the initramfs holds the stage in order, nothing is left beside it"""
        # pack runs after make_src, which leaves a Makefile in out/
        self.write("out/Makefile", "")
        for name in ("stage/b/z", "stage/a/y"):
            self.write(name, "")
        os.symlink("/bin/busybox", self.path("stage", "sh"))
        # in a process of its own: cpio and gzip write to its standard output
        done = support.python('''import sys, selftests_step
selftests_step.pack(sys.argv[1] + "/stage", sys.argv[1] + "/out/i.cpio.gz")''', self.tmp)
        listing = support.run(["bash", "-c", 'zcat "$1" | cpio -it --quiet | paste -sd" "',
                               "bash", self.path("out", "i.cpio.gz")]).out
        left = "".join(name + "\n" for name in sorted(
            (os.path.relpath(os.path.join(top, n), self.path("out"))
             for top, dirs, files in os.walk(self.path("out")) for n in dirs + files),
            key=os.fsencode))
        self.same("selftests: the initramfs holds the stage in order, nothing is left beside it",
                  "a a/y b b/z sh\nMakefile\ni.cpio.gz",
                  (done.text() +
                   listing + left).rstrip("\n"))

    def test_init_truncated(self):
        """selftests: an /init without its reset at the end is refused"""
        # a /init that does not end as it must (a truncated file) is refused
        with open(os.path.join(support.REPO, "tools", "guest", "init")) as f:
            lines = f.readlines()
        self.write("init/tools/guest/init", "".join(lines[:-1]))
        done = support.python('''import sys, common, selftests_step
selftests_step.REPO = sys.argv[1]
print(common.run_command("init", lambda: selftests_step.write_init(sys.argv[1] + "/init", 120)))''',
                              self.path("init"))
        self.same("selftests: an /init without its reset at the end is refused",
                  "blkctx: error: guest: tools/guest/init does not print the sentinel and reset "
                  "at its end\n1\ntools",
                  done.out + "\n".join(sorted(os.listdir(self.path("init")))))

    def test_bench_guest(self):
        """guest: bench's one guest, its kernel, log, parameters and timeout"""
        t = self.tree()
        # its name, the kernel it asks for (no tree state for a build that is
        # not KUnit's), its parameters, and the user's
        boot = os.path.join(t, "cache", "build", "pristine-emu-x86_64", "arch", "x86", "boot")
        os.makedirs(boot)
        open(os.path.join(boot, "bzImage"), "w").close()
        out = guests(t, '''def boot(arch, tree, config, kernel, initrd, append, log, timeout,
         *rest):
    print("booted", os.path.relpath(kernel, common.BUILD), os.path.basename(log),
          append.split(" ", 3)[3], timeout, flush=True)
    return 0
guest.boot_guest = boot
print("status", st.main(["guest", "x86_64", "--name", "bench-x", "--build", "pristine-emu",
                         "--targets", "t", "--append", "a=1 b=2", "--timeout", "7200"]))''',
                     env={"BLKCTX_GUEST_APPEND": "user=2"})
        self.same("guest: bench's one guest, its kernel, log, parameters and timeout",
                  "built\n"
                  "booted pristine-emu-x86_64/arch/x86/boot/bzImage selftests-x86_64-bench-x.log "
                  "mmc_core.contexts=1 a=1 b=2 user=2 7200\n"
                  "status 0",
                  without(r"^blkctx: selftests: booting|^selftests: x86_64", out))

    def test_one_failure_reported(self):
        """A bash step that fails is one failure reported, not the bash's too"""
        # apt's lists checked by blkctx.sh's guest_apt_ready (a stand-in that
        # fails as die does): one failure reported, not the bash's too
        self.write("lib/blkctx.sh", 'echo "$*"\n'
                   'echo "die 0 1 0" >>"${BLKCTX_RESULTS:-/dev/null}"\n'
                   "exit 1\n")
        results = self.path("apt-results")
        for name, code, expected in (
                ("guest: apt's lists for armhf missing: one failure reported",
                 '''import sys, common, selftests_step
common.LIB = sys.argv[1]
print("status", common.run_command("guest", lambda: selftests_step.apt_ready("arm")))''',
                 "apt-ready armhf\n"
                 "blkctx: error: guest: apt has no armhf package lists (see above)\n"
                 "status 1\n"
                 "reported: die 0 1 0"),
                ("demo, bench: a setup that fails is one failure reported",
                 '''import sys, common
common.LIB = sys.argv[1]
print("status", common.run_command("demo", lambda: common.run_setup("demo")))''',
                 "setup\n"
                 "blkctx: error: demo: setup failed (see above)\n"
                 "status 1\n"
                 "reported: die 0 1 0")):
            open(results, "w").close()
            done = support.python(code, self.path("lib"), env={"BLKCTX_RESULTS": results})
            with open(results) as f:
                reported = ",".join(f.read().splitlines())
            self.same(name, expected, done.out + "reported: " + reported)


class Apt(support.Case):
    """Apt-get update is tried three times, then the lists
    apt has are used; guest_apt_ready dies when they still lack the guest's
    architecture."""

    def test_update(self):
        """apt_update: three tries, then a warning"""
        done = support.bash('''tries=0
apt-get() { tries=$((tries + 1)); [ "$tries" -ge 3 ]; }
sleep() { :; }
apt_update 2>/dev/null && echo "returned after $tries"''', split=True)
        self.same("apt: an update that fails twice is tried a third time", "returned after 3",
                  done.out.rstrip("\n"))
        done = support.bash('''apt-get() { return 100; }
sleep() { :; }
apt_update 2>&1 | grep -c "going on"''', split=True)
        self.same("apt: an update that keeps failing is a warning", "1", done.out.rstrip("\n"))

    def test_no_lists(self):
        """guest_apt_ready dies without the lists after an update"""
        done = support.bash('''dpkg() {
    case $1 in --print-architecture) echo amd64 ;; *) echo armhf ;; esac
}
apt-cache() { return 100; }
apt-get() { return 0; }
id() { echo 0; }
guest_apt_ready armhf 2>/dev/null
echo reached''', split=True)
        self.same("apt: no armhf lists after an update dies", "", done.out.rstrip("\n"))


# a stand-in apt-get: it resolves only for an empty system of armhf (an
# empty dpkg status, armhf the only architecture), and fails for "broken" as
# apt does for a dependency it cannot meet
APT_GET = """#!/bin/sh
empty=no arch=
for a; do
	case $a in
	Dir::State::status=*) [ -s "${a#*=}" ] || empty=yes ;;
	APT::Architectures=*) arch=${a#*=} ;;
	broken) echo "E: Unable to correct problems, you have held broken packages." >&2; exit 100 ;;
	esac
done
[ "$empty $arch" = "yes armhf" ] || { echo "E: not an empty armhf system" >&2; exit 100; }
echo "Inst libc6 (2.36-9 Debian:12.15/oldstable [armhf]) []"
echo "Inst libgcc-s1 (12.2.0-14 Debian:12.15/oldstable [armhf])"
echo "Conf libc6 (2.36-9 Debian:12.15/oldstable [armhf])"
echo "Inst busybox (1:1.35.0-4 Debian:12.15/oldstable [armhf])"
echo "Inst tzdata (2024a-0+deb12u1 Debian:12.15/oldstable [all])"
"""


class Resolve(support.Case):
    """The guests' packages as apt resolves them; a
    failed resolution is never cached as resolved."""

    def test_resolve(self):
        """guest_root.resolve with a stand-in apt-get"""
        self.write("bin/apt-get", APT_GET, 0o755)
        # in a process of its own: the stand-in comes first in its PATH
        done = support.python('''import common, guest_root
print(*guest_root.resolve("armhf", ["busybox"]), sep="\\n")
print(common.run_command("guest", lambda: guest_root.resolve("armhf", ["broken"])))
print(common.run_command("guest", lambda: guest_root.resolve("amd64", ["busybox"])))''',
                              env={"PATH": self.path("bin") + ":" + os.environ["PATH"]})
        self.same("guest: packages as apt resolves them for an empty system of the guest's "
                  "architecture",
                  "busybox 1:1.35.0-4 armhf\n"
                  "libc6 2.36-9 armhf\n"
                  "libgcc-s1 12.2.0-14 armhf\n"
                  "tzdata 2024a-0+deb12u1 all\n"
                  "blkctx: error: guest: apt cannot install broken for armhf: E: Unable to "
                  "correct problems, you have held broken packages.\n"
                  "1\n"
                  "blkctx: error: guest: apt cannot install busybox for amd64: E: not an empty "
                  "armhf system\n"
                  "1",
                  (done.text()).rstrip("\n"))

    def test_resolved(self):
        """guest_root.resolved's cache, and fetch"""
        done = support.python('''import sys, common, guest_root
def fails(darch, debs):
    raise common.Failure("guest: no armhf package provides libfoo")
path = sys.argv[1] + "/resolved"
print(common.run_command("guest", lambda: guest_root.resolved(path, "key", "armhf", fails)))
import os
print("cached" if os.path.exists(path) else "not cached")
with open(path, "w") as f:
    f.write("key\\n\\n")
print(*guest_root.resolved(path, "key", "armhf", lambda darch, debs: ["busybox 1:1.35.0-4 armhf"]))
print(*guest_root.resolved(path, "key", "armhf", fails))
with open(path, "wb") as f:
    f.write(b"key\\n\\xff\\n")
print(*guest_root.resolved(path, "key", "armhf", lambda darch, debs: ["sqlite3 3.40.1-2 armhf"]))
# fetch: what is missing downloaded, what is no longer listed dropped
os.makedirs(sys.argv[1] + "/debs")
for name in ("old_1_armhf.deb", "kept_1_armhf.deb"):
    open(sys.argv[1] + "/debs/" + name, "w").close()
def download(directory, specs):
    print("download", *specs)
    for spec in specs:
        name, rest = spec.split(":", 1)
        arch, version = rest.split("=", 1)
        open(os.path.join(directory, guest_root.deb_file(name, version, arch)), "w").close()
    return True
guest_root.download = download
guest_root.fetch(sys.argv[1] + "/debs", ["kept 1 armhf", "new 1:2 armhf"])
print(*sorted(os.listdir(sys.argv[1] + "/debs")))''', self.tmp)
        self.same("guest: a failed resolution fails and is not cached; an empty or unreadable "
                  "cached one is resolved again; fetch",
                  "blkctx: guest: no armhf package provides libfoo\n"
                  "blkctx: error: guest: cannot resolve the armhf packages busybox e2fsprogs "
                  "mmc-utils sqlite3 and their dependencies\n"
                  "1\n"
                  "not cached\n"
                  "busybox 1:1.35.0-4 armhf\n"
                  "busybox 1:1.35.0-4 armhf\n"
                  "sqlite3 3.40.1-2 armhf\n"
                  "blkctx: guest: downloading new:armhf=1:2\n"
                  "download new:armhf=1:2\n"
                  "kept_1_armhf.deb new_1%3a2_armhf.deb",
                  (done.text()).rstrip("\n"))

    def test_copy_elf(self):
        """guest: a program with its interpreter and libraries"""
        # a program of the host's own copied with what it needs to run
        root = self.path("copy")
        triplet = sys.implementation._multiarch
        guest_root.copy_elf("/", root, "usr/bin/true", triplet, {})
        interp, needed = guest_root.elf_needs(root + "/usr/bin/true")
        copied = all(any(guest_root.real(root, d + "/" + lib)
                         for d in ("lib/" + triplet, "usr/lib/" + triplet, "lib", "usr/lib"))
                     for lib in needed)
        self.same("guest: a program with its interpreter and libraries",
                  "interpreter copied\nlibraries 1 copied",
                  "interpreter %s\nlibraries %d %s" % (
                      "copied" if interp and guest_root.real(root, interp) else "missing",
                      len(needed), "copied" if copied else "missing"))

    def test_real(self):
        """guest: paths in the packages, through their symlinks"""
        # symlinks resolved inside the root, a loop is no file
        root = self.path("root")
        self.write("root/usr/lib/libc.so.6", "")
        os.makedirs(self.path("root", "lib"))
        os.symlink("../usr/lib/libc.so.6", self.path("root", "lib", "libc.so.6"))
        os.symlink("/lib/../usr/lib/libc.so.6", self.path("root", "abs"))
        os.symlink("loop2", self.path("root", "loop1"))
        os.symlink("loop1", self.path("root", "loop2"))
        out = ""
        for path in ("lib/libc.so.6", "/abs", "loop1", "lib/none"):
            said, found = captured(guest_root.real, root, path)
            out += said + "%s\n" % found
        self.same("guest: paths in the packages, through their symlinks",
                  "usr/lib/libc.so.6\n"
                  "usr/lib/libc.so.6\n"
                  "blkctx: guest: symlink loop at loop1\n"
                  "None\n"
                  "None", out.rstrip("\n"))

