# SPDX-License-Identifier: GPL-2.0
"""The kernel tree and the patch files: tree_step.py's prepare, export,
reorder and mail on scratch trees, the check that a tree holds the patch
files as they are (common.tree_current) in every command that uses it, and
the patch files in git am's order."""

import os
import re
import subprocess
from unittest import mock

import support

import common
import kunit_step
import tree_step


def text(done):
    """What a bash $(...) of DONE's output holds: no newline at its end."""
    return done.out.rstrip("\n")


def tree_files(top):
    """Every file under TOP, by its path from TOP: what diff -r compares."""
    files = {}
    for directory, _, names in os.walk(top):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, top)] = f.read()
    return files


NOT_EXPORTED = ("blkctx: error: %s/cache/linux has work that is not exported (commit it and run "
                "tools/blkctx export, or use prepare --force to drop it)")

# a record that the tree holds the files, but its last commit not exported
RECORD_ONE_AHEAD = """tree.record()
with open(tree.dot_git("blkctx-applied-head"), "w") as f:
    f.write(tree.git("rev-parse", "HEAD~1"))
"""


class Prepare(support.Case):
    """A new source version never deletes commits not exported;
    the commands that use the tree refuse one older than the patch files."""

    def setUp(self):
        super().setUp()
        self.t = support.scratch_tree(self.path("prep"))

    def test_new_source(self):
        """prepare: a new source would extract the tree again: it stops before"""
        rc = support.tree_step(self.t, RECORD_ONE_AHEAD + """tree.tarball_version = lambda: "2"
def extracted():
    print("extracted again")
    sys.exit(1)
tree.make_pristine = extracted
print(run(tree.prepare), tree.git("log", "-1", "--format=%s").strip())""", split=True)
        self.same("prepare: a new source keeps commits not exported", "1 block: a change",
                  text(rc))

    def test_force(self):
        """prepare --force, with a commit not exported: source version 1 is the tree's"""
        for source, want, what in (
                ("2", "extracted again applied 0", "a new source is extracted again"),
                ("1", "applied 0", "the same source drops commits not exported (CI's prepare)")):
            t = support.scratch_tree("%s-%s" % (self.t, source))
            rc = support.tree_step(t, RECORD_ONE_AHEAD + """
tree.tarball_version = lambda: sys.argv[2]
tree.make_pristine = lambda: print("extracted again")
tree.apply_series = lambda: print("applied")
print(run(tree.prepare, True))""", source, split=True)
            self.same("prepare --force: " + what, want, " ".join(rc.out.splitlines()))

    def test_cover_letter(self):
        """prepare: the cover letter's body as it is, byte for byte (another
        encoding, a carriage return, a form feed)"""
        rc = support.tree_step(self.t, r"""import os
os.makedirs(tree.repo + "/series", exist_ok=True)
with open(tree.repo + "/series/0000-cover-letter.patch", "wb") as f:
    f.write(b"Subject: [PATCH 0/1] caf\xe9\n\ncaf\xe9\r\nform\x0cfeed\n\nblkctx developers (1):\n")
print(repr(tree.cover_subject().encode("utf-8", "surrogateescape")),
      repr(tree.cover_body().encode("utf-8", "surrogateescape")))""")
        self.same("prepare: the cover letter's subject and body, byte for byte",
                  r"b'caf\xe9' b'caf\xe9\r\nform\x0cfeed'", text(rc))

    def test_same_source(self):
        """prepare: the same source, a commit not exported: refused"""
        rc = support.tree_step(self.t, RECORD_ONE_AHEAD + """tree.tarball_version = lambda: "1"
print(run(tree.prepare), tree.git("log", "-1", "--format=%s").strip())""")
        self.same("prepare: the same source with commits not exported is refused",
                  NOT_EXPORTED % self.t + "\n1 block: a change", text(rc))

    def test_no_record(self):
        """prepare: a tree without the record of its last prepare or export
        (interrupted, or made by an older prepare) holds nothing to lose only
        at pristine"""
        rc = support.tree_step(self.t, """tree.tarball_version = lambda: "1"
tree.apply_series = lambda: print("applied")
print(run(tree.prepare))
tree.git("reset", "-q", "--hard", "pristine")
print(run(tree.prepare))""")
        self.same("prepare: without a record, a commit beyond pristine is kept",
                  NOT_EXPORTED % "T" + "\n1\napplied\n0", text(rc).replace(self.t, "T"))

    def test_gitignore(self):
        """prepare: the Debian rules and what is left at the end of them go;
        git then sees the tree's own files"""
        self.same("prepare: Debian's .gitignore rules go", ".*\n!.gitignore\n",
                  tree_step.gitignore_without_debian(
                      ".*\n!.gitignore\n\n#\n# Debian packaging: ignore everything at the top "
                      "level, since it isn't\n#\n/*\n!/debian/\n"))

    def test_current(self):
        """tree_current: the tree holds the patch files as they are"""
        rc = support.tree_step(self.t, """tree.record()
def current():
    tree_step.common.tree_current(tree.tree, tree.repo, tree.tarball)
    print("current")
print(run(current))
with open(tree.dot_git("blkctx-applied"), "w") as f:
    f.write("stale\\n")
print(run(current))""", split=True)
        self.same("the tree must hold the patch files as they are", "current\n0\n1", text(rc))


# every command that uses the tree, each with what it would run after the
# tree's check replaced by a stand-in that says so
# ARGV: the linux-source-6.12 installed now, only this command
STALE = """import shutil, sys
import build_step, checkpatch_step, kunit_step, pahole_step, selftests_step, tree_step
tree_step.common.source_version = lambda tarball=None: sys.argv[1]
shutil.which = lambda name: "/bin/true"
def ran(*args, **kwargs):
    print("ran")
    raise SystemExit(3)
kunit_step.run_arch = checkpatch_step.judge = pahole_step.ready = selftests_step.run_guest = ran
import common
common.worktree = build_step.warnings_arch = ran
tree_step.Tree.recipients = ran
for module, argv in ((kunit_step, ["kunit"]), (checkpatch_step, ["checkpatch"]),
                     (pahole_step, ["pahole"]), (build_step, ["build-each"]),
                     (build_step, ["warnings"]), (selftests_step, ["selftests"]),
                     (tree_step, ["mail", "--from=A B <a@b.c>", "/nonexistent/mail"])):
    if sys.argv[2:] in ([], [argv[0]]):
        print(argv[0], module.main(argv, lock=False))
"""
COMMANDS = ("kunit", "checkpatch", "pahole", "build-each", "warnings", "selftests", "mail")


class StaleTree(support.Case):
    """Kunit.py's architecture options, and the commands that
    refuse a tree prepared from other patch files."""

    def test_kunit_args(self):
        """kunit: --arch, and --cross_compile only for arm"""
        # kunit.py's architecture options: a cross compiler only where one is
        self.same("kunit: --arch, and --cross_compile only for arm",
                  "--arch=x86_64\n--arch=arm --cross_compile=arm-linux-gnueabihf-",
                  "\n".join(" ".join(a for a in kunit_step.kunit_args(arch)
                                     if a.startswith(("--arch", "--cross")))
                            for arch in ("x86_64", "arm")))

    def test_stale_tree(self):
        """every command that uses the tree refuses a stale one"""
        t = self.path("stale")
        os.makedirs(os.path.join(t, "cache", "linux"))
        subprocess.run(["git", "-C", os.path.join(t, "cache", "linux"), "init", "-q"],
                       check=True, stdin=subprocess.DEVNULL)
        self.write("stale/cache/linux/.git/blkctx-applied", "stale\n")
        self.write("stale/cache/linux/.git/blkctx-source", "6.12.1-1\n")
        # common.CACHE is read at import, and the commands' main() ends
        # with run_command's signal handlers: a process of its own
        done = support.python(STALE, "6.12.1-1", env={"BLKCTX_CACHE": os.path.join(t, "cache")})
        out = text(done) + (" status %d" % done.status if done.status else "")
        self.same("every command that uses the tree refuses a stale one",
                  "\n".join("%s 1" % command for command in COMMANDS),
                  "\n".join(line for line in out.split("\n") if not line.startswith(
                      "blkctx: error: series/, kunit/ or selftests/ changed since")))

    def test_new_source(self):
        """every command that uses the tree refuses one prepared from another
        linux-source-6.12"""
        support.scratch_tree(self.tmp)
        linux = os.path.join(self.tmp, "cache", "linux")
        # the patch files as they are, nothing unexported: only the source
        # can differ
        self.write("cache/linux/.git/blkctx-applied", common.patches_digest() + "\n")
        self.write("cache/linux/.git/blkctx-applied-head", common.git_text(linux, "rev-parse",
                                                                           "HEAD"))
        self.write("cache/linux/.git/blkctx-source", "6.12.1-1\n")
        cache = {"BLKCTX_CACHE": os.path.join(self.tmp, "cache")}
        done = support.python(STALE, "6.12.2-1", env=cache)
        want = ("blkctx: error: linux-source-6.12 is 6.12.2-1 now, %s was prepared from "
                "6.12.1-1: run tools/blkctx prepare" % linux)
        self.same("every command that uses the tree refuses one prepared from another source",
                  "\n".join("%s 1" % command for command in COMMANDS),
                  "\n".join(line for line in text(done).split("\n")
                            if not line.startswith(want)))
        # each command gets as far as its work (a stand-in that exits 3)
        took = []
        for command in COMMANDS:
            done = support.python(STALE, "6.12.1-1", command, env=cache)
            took.append("%s %s %d" % (command, text(done), done.status))
        self.same("the commands take a tree prepared from the source installed",
                  "\n".join("%s ran 3" % command for command in COMMANDS), "\n".join(took))

    def test_source_version(self):
        """the source version: dpkg's for Debian's tarball, none for another"""
        ran = mock.Mock(returncode=0, stdout="6.12.2-1\n")
        with mock.patch.object(common.subprocess, "run", return_value=ran) as run:
            self.same("source version: dpkg's, for Debian's tarball",
                      "6.12.2-1 ['dpkg-query', '-W', '-f=${Version}', 'linux-source-6.12']",
                      "%s %s" % (common.source_version(common.DEBIAN_TARBALL),
                                 run.call_args.args[0]))
            self.same("source version: unknown for a tarball of one's own, dpkg not asked",
                      "unknown 1", "%s %d" % (common.source_version(self.path("my.tar.xz")),
                                              run.call_count))
        ran.returncode = 1
        with mock.patch.object(common.subprocess, "run", return_value=ran):
            self.same("source version: unknown when dpkg does not have the package", "unknown",
                      common.source_version(common.DEBIAN_TARBALL))
        support.scratch_tree(self.tmp)
        linux, repo = self.path("cache", "linux"), self.path("repo")
        self.write("cache/linux/.git/blkctx-applied", common.patches_digest(repo) + "\n")

        def current(source):
            try:
                common.tree_current(linux, repo, "/nonexistent", source)
                return "current"
            except common.Failure as e:
                return str(e).split(":")[0]
        self.same("tree_current: the same source, another, an unknown one",
                  "current; linux-source-6.12 is 2 now, %s was prepared from 1; current" % linux,
                  "; ".join(current(source) for source in ("1", "2", "unknown")))
        os.unlink(self.path("cache", "linux", ".git", "blkctx-source"))
        self.same("tree_current: a tree with no record of its source is not current",
                  "linux-source-6.12 is 1 now, %s was prepared from unknown" % linux,
                  current("1"))


class Patches(support.Case):
    """The files in git am's order, quiet when its reader stops
    early."""

    BLKCTX = os.path.join(support.REPO, "tools", "blkctx")

    def test_order(self):
        """patches: series/ first, selftests/ last"""
        done = support.run([self.BLKCTX, "patches"])
        lines = done.out.splitlines()
        # the first and last lines (sed -n '1p;$p'), then the status
        picked = lines[:1] + lines[-1:] + [str(done.status)]
        self.same("patches: series/ first, selftests/ last", "series/0001 selftests/ 0",
                  " ".join(re.sub(r"^.*/(selftests/).*", r"\1",
                                  re.sub(r"^.*/(series/0001)-.*", r"\1", line))
                           for line in picked))

    def test_reader_stops_early(self):
        """patches: a reader that stops early is no error"""
        # the reader closes its end before python3 has started
        done = support.run(["bash", "-c", '"$1" patches 2>&1 | { exec <&-; sleep 1; }; '
                            'echo "${PIPESTATUS[0]}"', "bash", self.BLKCTX])
        self.same("patches: a reader that stops early is no error", "0", text(done))


EXPORT_AND_MAIL = """import os, shutil
tree.record()
if run(tree.export):
    sys.exit(1)
shutil.copytree(tree.repo + "/series", sys.argv[2] + "/series")
sys.exit(run(tree.mail, sys.argv[2] + "/mail", "Mail Tester <tester@example.org>"))"""

REFUSED = """import subprocess
sender = "Mail Tester <tester@example.org>"
def commit(subject, name="a.c"):
    with open(tree.tree + "/" + name, "a") as f:
        f.write(subject + "\\n")
    tree.git("add", name)
    tree.git("commit", "-q", "-m", subject)
with open(tree_step.common.patch_files(tree.repo)[0], "a") as f:
    f.write("\\n")
print("stale files", run(tree.mail, sys.argv[2] + "/1", sender))
print("stale files", run(tree.export))
print("forced", run(tree.export, True))
commit("mmc: a later change", "l.c")
print("not exported", run(tree.mail, sys.argv[2] + "/2", sender))
with open(tree.tree + "/a.c", "a") as f:
    f.write("uncommitted\\n")
print("uncommitted", run(tree.export))
tree.git("checkout", "-q", "--", "a.c")
commit("mmc: add KUnit tests", "k.c")
commit("mmc: yet another change", "y.c")
print("order", run(tree.export))
print("patches", len(tree_step.common.patch_files(tree.repo)))
# reorder: the fixup folded into its commit, the groups in order
commit("fixup! mmc: a later change", "l.c")
commit("selftests: mmc: a test", "t.sh")
commit("block: last", "b.c")
print("reorder", run(tree.reorder))
print("fixup", "folded" if "fixup! mmc: a later change" in tree.git("show", "HEAD:l.c")
      else "lost")
print("export", run(tree.export),
      *(p.split("/")[-2] for p in tree_step.common.patch_files(tree.repo)))
"""

REFUSED_WANT = """\
blkctx: error: series/, kunit/ or selftests/ changed since T/cache/linux was prepared or exported: \
run tools/blkctx prepare to apply them (it refuses while the tree has commits that are not \
exported; export those first)
stale files 1
blkctx: error: series/, kunit/ or selftests/ changed since T/cache/linux was prepared or exported: \
export would overwrite that change; run tools/blkctx prepare to apply the files (it refuses while \
the tree has commits that are not exported), or export --force to replace the files with the \
tree's commits
stale files 1
blkctx: export: 1 patches written into series/, kunit/, selftests/
forced 0
blkctx: error: T/cache/linux has work that is not in series/, kunit/, selftests/: commit it and \
run tools/blkctx export first
not exported 1
blkctx: error: T/cache/linux has uncommitted changes: commit them first
uncommitted 1
blkctx: error: "mmc: yet another change" (series) comes after a later group: order the commits \
series, kunit, selftests
order 1
patches 1
H selftests: mmc: a test
H mmc: add KUnit tests
H block: last
H mmc: yet another change
H mmc: a later change
H block: a change
reorder 0
fixup folded
blkctx: export: 6 patches written into series/, kunit/, selftests/
export 0 series series series series kunit selftests"""


class Export(support.Case):
    """Export and mail, the same bytes whatever the user's git
    configuration, and what they refuse."""

    def test_export(self):
        """export and mail: a personal git config, and what they refuse"""
        t = self.path("export")
        support.scratch_tree(t)
        self.write("export/home/.gitconfig",
                   '[format]\n\theaders = "X-Personal: yes"\n\tsignOff = true\n[diff]\n'
                   '\torderFile = %s\n\tnoprefix = true\n' % os.path.join(t, "order"))
        self.write("export/order", "z.c\na.c\n")
        failed = []
        for mode in ("plain", "personal"):
            env = {} if mode == "plain" else {
                "GIT_CONFIG_GLOBAL": os.path.join(t, "home", ".gitconfig")}
            done = support.tree_step(t, EXPORT_AND_MAIL, os.path.join(t, mode), env=env)
            if done.status:
                failed.append("export or mail failed (%s)\n%s" % (mode, done.out))
        # without the isolation, the personal config changes the patch;
        # mail's message ids are made of the time, and may fall in different
        # seconds: drop them (and the headers that repeat them, and the cover
        # letter's date, which is the time of the run) before comparing
        trees = []
        for mode in ("plain", "personal"):
            files = tree_files(os.path.join(t, mode))
            for name, data in files.items():
                if name.endswith(".patch"):
                    drop = (b"Message-Id:", b"In-Reply-To:", b"References:")
                    if name.endswith("0000-cover-letter.patch"):
                        drop += (b"Date:",)
                    files[name] = b"".join(line for line in data.splitlines(True)
                                           if not line.startswith(drop))
            trees.append(files)
        # the personal config is one that would change the patch
        personal = subprocess.run(["git", "-C", os.path.join(t, "cache", "linux"),
                                   "format-patch", "--stdout", "-1"],
                                  env=dict(os.environ, GIT_CONFIG_GLOBAL=os.path.join(
                                      t, "home", ".gitconfig")),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE).stdout
        with self.subTest("export and mail: the same bytes under a personal git config"):
            self.assertIn(b"X-Personal", personal, "the personal config changes nothing")
            self.assertEqual([], failed)
            self.assertTrue(trees[0], "nothing written")
            self.assertEqual(sorted(trees[0]), sorted(trees[1]))
            for name in sorted(trees[0]):
                self.assertEqual(trees[0][name], trees[1][name], name)
        # what export and mail refuse: the files changed but not the tree
        # (export unless forced), a commit not exported, uncommitted changes,
        # groups out of order; then reorder folds the fixup and orders the
        # groups, and export takes it (on the tree the first case exported)
        rc = support.tree_step(t, REFUSED, os.path.join(t, "refused"))
        self.same("export and mail: what they refuse", REFUSED_WANT,
                  re.sub(r"^[0-9a-f]{7,40} ", "H ", text(rc).replace(t, "T"), flags=re.M))
