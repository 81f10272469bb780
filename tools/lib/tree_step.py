#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The kernel tree and the patch files: prepare, export, reorder, mail.

  prepare [--force]        pristine 6.12 plus one commit per patch
  export                   the tree's commits back into the patch files
  reorder                  squash fixup! commits, order the groups
  mail [--reroll=N] --from=IDENT DIR
                           the series as mail from IDENT, checked with b4
  mail-check               mail from a test sender, checked, thrown away
  patches                  the patch files in the order git am takes them

The tree is a git repository in $BLKCTX_CACHE/linux: one commit for the
pristine tree (tagged "pristine"), then one per patch on branch "blkctx".
.git/blkctx-applied holds the digest of the patch files it was prepared or
exported from (common.tree_current), .git/blkctx-applied-head the commit
they were, and .git/blkctx-source the version of Debian's linux-source-6.12.
"""

import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402
from common import Failure  # noqa: E402
import procs  # noqa: E402
from procs import SIGNALS, say  # noqa: E402

IDENT_NAME = "blkctx developers"
IDENT_EMAIL = "devel@blkctx.invalid"
IDENT = "%s <%s>" % (IDENT_NAME, IDENT_EMAIL)
# a fixed date makes the pristine commit, and so every export, reproducible
PRISTINE_DATE = "2024-11-17T00:00:00+00:00"
DEFAULT_SUBJECT = "blkctx: block I/O contexts for eMMC as write streams"
GROUPS = ("series", "kunit", "selftests")
COVER = "0000-cover-letter.patch"
# git as everyone has it, for what ends up in patch files and for the
# check of the mail: format.headers, diff.orderFile, diff.noprefix,
# mailinfo.scissors, trailer.* and the like would change the bytes
PURE = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
# Text as git and the files have it, byte for byte: UTF-8 where it is, any
# other byte kept (surrogateescape), lines split only at "\n"
TEXT = {"encoding": "utf-8", "errors": "surrogateescape"}


def read_text(path):
    with open(path, newline="", **TEXT) as f:
        return f.read()


def write_text(path, text):
    with open(path, "w", newline="", **TEXT) as f:
        f.write(text)


def lines_of(text):
    """TEXT's lines as awk and sed see them: split at "\n" only."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def identity(name, email):
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}


def patch_dir(subject):
    """Where a commit's patch belongs, from its subject."""
    if subject.startswith("selftests:"):
        return "selftests"
    if "KUnit" in subject:
        return "kunit"
    return "series"


def reorder_todo(path):
    """git rebase's todo list in PATH with the pick lines of the series
    first, then KUnit's, then the selftests' (patch_dir), each group in its
    own order; a fixup or squash line stays with the pick before it."""
    groups = {group: [] for group in GROUPS}
    last = None
    with open(path, **TEXT) as f:
        lines = f.read().split("\n")
    for line in lines:
        words = line.split(" ", 2)
        if words[0] in ("pick", "p") and len(words) == 3:
            last = groups[patch_dir(words[2])]
            last.append(line)
        elif words[0] in ("fixup", "f", "squash", "s") and last:
            last[-1] += "\n" + line
        elif line and not line.startswith("#"):
            raise Failure("reorder: cannot handle this line of the rebase's list: " + line)
    write_text(path, "".join(line + "\n" for group in GROUPS for line in groups[group]))


def kernel_version(tree):
    """What the kernel's Makefile in TREE says its version is."""
    return subprocess.run(["make", "-s", "-C", tree, "kernelversion"], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, **TEXT).stdout.strip()


def strip_trailing(lines):
    """LINES without the empty lines at their end."""
    while lines and lines[-1] == "":
        lines = lines[:-1]
    return lines


def gitignore_without_debian(text):
    """Debian's top-level .gitignore ignores everything ("/*", for its
    packaging): its rules go, so that git sees the tree and new files as
    usual, and so do the comment and empty lines left at the end."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    for i, line in enumerate(lines):
        if line.startswith("# Debian packaging: ignore everything"):
            lines = lines[:i]
            break
    # the empty lines at the end, and a "#" line that only those follow
    lines = strip_trailing(lines)
    if lines and lines[-1] == "#":
        lines = strip_trailing(lines[:-1])
    return "".join(line + "\n" for line in lines)


class Tree:
    """The kernel tree of CACHE for the patch files of REPO; a selfcheck
    case gives its own."""

    def __init__(self, repo=common.REPO, cache=common.CACHE, tarball=common.TARBALL):
        self.repo = repo
        self.cache = cache
        self.tree = os.path.join(cache, "linux")
        self.build = os.path.join(cache, "build")
        self.tarball = tarball

    def run_git(self, *args, user=False, env=None, stdin=None, cwd=None, quiet=False,
                terminal=False):
        """git in the tree (or CWD) as the series' identity, without the
        user's and the system's configuration unless USER (it would change
        what git prints: log.showSignature, format.headers and the like),
        STDIN as its input, without its standard error if QUIET, on our
        terminal if TERMINAL (an editor, and what am and rebase say). An
        interrupt waits for it: a git stopped midway leaves its locks."""
        environ = dict(os.environ, **identity(IDENT_NAME, IDENT_EMAIL))
        if not user:
            environ.update(PURE)
        environ.update(env or {})
        with SIGNALS.deferred():
            return subprocess.run(
                ["git", "-C", cwd or self.tree] + list(args), input=stdin,
                stdin=None if stdin is not None or terminal else subprocess.DEVNULL,
                stdout=None if terminal else subprocess.PIPE, env=environ,
                stderr=subprocess.DEVNULL if quiet else None, **TEXT)

    def git(self, *args, check=True, **kwargs):
        """run_git's output; unless CHECK, a failure is no error."""
        run = self.run_git(*args, **kwargs)
        if check and run.returncode != 0:
            command = next((a for a in args if not a.startswith("-") and "=" not in a), "")
            raise Failure("git %s in %s failed" % (command, kwargs.get("cwd") or self.tree))
        return run.stdout

    def dot_git(self, name):
        return os.path.join(self.tree, ".git", name)

    def read_dot_git(self, name):
        try:
            return read_text(self.dot_git(name)).strip()
        except OSError:
            return None

    def record(self):
        """The tree holds exactly the patch files now."""
        write_text(self.dot_git("blkctx-applied"),
                   common.patches_digest(self.repo) + "\n")
        write_text(self.dot_git("blkctx-applied-head"), self.git("rev-parse", "HEAD"))

    def tarball_version(self):
        return common.source_version(self.tarball)

    def unexported(self):
        """Whether the tree holds work that the patch files do not: changes,
        or commits since the last prepare or export."""
        head = self.read_dot_git("blkctx-applied-head")
        if head is None:
            # no record (an interrupted prepare, an older one): only the
            # pristine commit is known to hold nothing of the user's
            head = self.git("rev-parse", "-q", "--verify", "pristine^{commit}",
                            check=False).strip()
        return bool(self.git("status", "--porcelain")) or \
            self.git("rev-parse", "HEAD").strip() != head

    def exact(self):
        """tree_current, and the tree holds nothing more than the files."""
        common.tree_current(self.tree, self.repo, self.tarball, self.tarball_version())
        if self.unexported():
            raise Failure("%s has work that is not in series/, kunit/, selftests/: commit it "
                          "and run tools/blkctx export first" % self.tree)

    def make_pristine(self):
        if not os.path.isfile(self.tarball):
            raise Failure("%s not found: run tools/blkctx setup" % self.tarball)
        tmp = os.path.join(self.cache, "linux.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            os.makedirs(tmp)
            say("prepare: extracting %s" % self.tarball)
            # a minute or more: an interrupt stops it at once
            if procs.run(["tar", "-xJf", self.tarball, "-C", tmp, "--strip-components=1"],
                         "prepare: extracting", procs.progress_seconds()) != 0:
                raise Failure("prepare: cannot extract %s" % self.tarball)
            gitignore = os.path.join(tmp, ".gitignore")
            write_text(gitignore, gitignore_without_debian(read_text(gitignore)))
            version = kernel_version(tmp)
            source = self.tarball_version()
            self.git("init", "-q", "-b", "base", cwd=tmp)
            for key, value in (("core.autocrlf", "false"), ("gc.auto", "0"),
                               ("user.name", IDENT_NAME), ("user.email", IDENT_EMAIL)):
                self.git("config", key, value, cwd=tmp)
            self.git("add", "-A", cwd=tmp)
            self.git("commit", "-q", "--no-verify", "-m",
                     "Linux %s (Debian linux-source-6.12 %s)" % (version, source), cwd=tmp,
                     env={"GIT_AUTHOR_DATE": PRISTINE_DATE, "GIT_COMMITTER_DATE": PRISTINE_DATE})
            self.git("tag", "pristine", cwd=tmp)
            write_text(os.path.join(tmp, ".git", "blkctx-source"), source + "\n")
            shutil.rmtree(self.tree, ignore_errors=True)
            os.rename(tmp, self.tree)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def apply_series(self):
        """Every patch on a branch "blkctx" from the pristine commit."""
        self.git("checkout", "-f", "-q", "-B", "blkctx", "pristine")
        self.run_git("am", "--abort", quiet=True)
        files = common.patch_files(self.repo)
        for path in files:
            if self.run_git("am", "-q", "--keep-cr", path, terminal=True).returncode != 0:
                raise Failure("patch %s does not apply; the tree is left in git am state in %s"
                              % (os.path.basename(path), self.tree))
        say("prepare: applied %d patches in %s" % (len(files), self.tree))
        self.record()

    def prepare(self, force=False):
        os.makedirs(self.build, exist_ok=True)
        old = self.read_dot_git("blkctx-source")
        new = self.tarball_version()
        if os.path.isdir(os.path.join(self.tree, ".git")) and old != new:
            # the tree is extracted again: never with work that is only there
            if not force and self.unexported():
                raise Failure(
                    "linux-source-6.12 changed (%s -> %s), and %s has work that is not "
                    "exported: commit it and run tools/blkctx export, then prepare again to "
                    "apply the series to the new source (or prepare --force to drop that work)"
                    % (old or "?", new, self.tree))
            say("prepare: linux-source-6.12 changed (%s -> %s); extracting it again"
                % (old or "?", new))
            shutil.rmtree(self.tree)
        if not os.path.isdir(os.path.join(self.tree, ".git")):
            self.make_pristine()
        if self.read_dot_git("blkctx-applied") == common.patches_digest(self.repo) \
                and self.read_dot_git("blkctx-applied-head") is not None and \
                not self.unexported():
            say("prepare: %s already holds the series" % self.tree)
            return
        if not force and self.unexported():
            raise Failure("%s has work that is not exported (commit it and run tools/blkctx "
                          "export, or use prepare --force to drop it)" % self.tree)
        self.apply_series()

    def require(self):
        if not os.path.isdir(os.path.join(self.tree, ".git")):
            raise Failure("no tree: run tools/blkctx prepare")

    def export(self, force=False):
        self.require()
        # files changed since the tree took them (edited, or pulled) would
        # be overwritten by commits that do not have the change
        if not force and self.read_dot_git("blkctx-applied") != common.patches_digest(self.repo):
            raise Failure("series/, kunit/ or selftests/ changed since %s was prepared or "
                          "exported: export would overwrite that change; run tools/blkctx "
                          "prepare to apply the files (it refuses while the tree has commits "
                          "that are not exported), or export --force to replace the files "
                          "with the tree's commits" % self.tree)
        if self.git("status", "--porcelain", "--untracked-files=no"):
            raise Failure("%s has uncommitted changes: commit them first" % self.tree)
        dirs = []
        for subject in lines_of(self.git("log", "--reverse", "--format=%s", "pristine..HEAD")):
            group = patch_dir(subject)
            if dirs and GROUPS.index(group) < GROUPS.index(dirs[-1]):
                raise Failure('"%s" (%s) comes after a later group: order the commits series, '
                              'kunit, selftests' % (subject, group))
            dirs.append(group)
        out = os.path.join(self.cache, "export.tmp")
        shutil.rmtree(out, ignore_errors=True)
        try:
            os.makedirs(out)
            self.git("-c", "core.abbrev=12", "format-patch", "-q", "--zero-commit",
                     "--no-signature", "-N", "--find-renames", "-o", out, "pristine..HEAD")
            written = sorted(glob.glob(os.path.join(out, "*.patch")))
            if len(written) != len(dirs):
                raise Failure("export: git format-patch wrote %d patches for %d commits"
                              % (len(written), len(dirs)))
            for group in GROUPS:
                pattern = os.path.join(self.repo, group, "[0-9][0-9][0-9][0-9]-*.patch")
                for old in glob.glob(pattern):
                    if os.path.basename(old) != COVER:
                        os.unlink(old)
            for path, group in zip(written, dirs):
                os.makedirs(os.path.join(self.repo, group), exist_ok=True)
                shutil.move(path, os.path.join(self.repo, group, os.path.basename(path)))
        finally:
            shutil.rmtree(out, ignore_errors=True)
        self.write_cover(os.path.join(self.repo, "series", COVER))
        self.record()
        say("export: %d patches written into series/, kunit/, selftests/"
            % len(common.patch_files(self.repo)))

    def reorder(self):
        """Fold fixup! commits into their targets and put the commits in
        series, kunit, selftests order, keeping the order in each group."""
        self.require()
        env = {"GIT_SEQUENCE_EDITOR": " ".join(shlex.quote(word) for word in (
            sys.executable, "-B", os.path.abspath(__file__), "reorder-todo"))}
        # the user's editor for a squash!, on the terminal
        if self.run_git("rebase", "-q", "-i", "--autosquash", "pristine", env=env, user=True,
                        terminal=True).returncode:
            raise Failure("rebase stopped; resolve it in %s (git rebase --continue or --abort)"
                          % self.tree)
        sys.stdout.write(self.git("log", "--oneline", "pristine..HEAD"))

    # The cover letter's subject and body are kept by hand in
    # series/0000-cover-letter.patch; the shortlog and diffstat are made.

    def cover_lines(self):
        try:
            return lines_of(read_text(os.path.join(self.repo, "series", COVER)))
        except FileNotFoundError:
            return None

    def cover_subject(self):
        for line in self.cover_lines() or []:
            m = re.match(r"Subject: \[[^]]*\] (.*)", line)
            if m:
                return m.group(1) or DEFAULT_SUBJECT
        return DEFAULT_SUBJECT

    def cover_body(self):
        lines = self.cover_lines()
        if lines is None:
            return "(no cover letter yet)"
        header = body = False
        text = []
        for line in lines:
            if header and line == "":
                header, body = False, True
                continue
            if line.startswith("Subject:"):
                header = True
            if body and re.fullmatch(r"blkctx developers \([0-9]+\):", line):
                break
            if body:
                text.append(line)
        return "\n".join(strip_trailing(text))

    def based_on(self):
        return "Based on Linux %s, as in Debian's linux-source-6.12 %s." % (
            kernel_version(self.tree), self.read_dot_git("blkctx-source") or "")

    def write_cover(self, path):
        """A cover letter for pristine..HEAD."""
        count = self.git("rev-list", "--count", "pristine..HEAD").strip()
        text = ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                "From: %s\nDate: %s\nSubject: [PATCH 0/%s] %s\n\n%s\n\n" % (
                    IDENT, self.git("log", "-1", "--format=%aD", "HEAD").strip(),
                    count, self.cover_subject(), self.cover_body()))
        text += self.git("shortlog", "pristine..HEAD")
        text += self.git("diff", "--stat=72", "--summary", "pristine..HEAD")
        text += "\n" + self.based_on() + "\n"
        write_text(path, text)

    def recipients(self, option, directory, roles):
        """OPTION=address for each address get_maintainer.pl gives for the
        patches in DIRECTORY with ROLES, but the series' own, which its
        MAINTAINERS entries name."""
        run = subprocess.run(["perl", "scripts/get_maintainer.pl", "--no-rolestats", "--no-git",
                              "--no-git-fallback"] + roles +
                             sorted(glob.glob(os.path.join(directory, "*.patch"))),
                             cwd=self.tree, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             **TEXT)
        if run.returncode != 0:
            raise Failure("mail: scripts/get_maintainer.pl failed")
        return ["%s=%s" % (option, line) for line in lines_of(run.stdout)
                if line and "<%s>" % IDENT_EMAIL not in line]

    def mail(self, directory, sender, reroll=1, tag=True):
        """The series as mail from SENDER into DIRECTORY, checked by
        mail_check. A reroll's cover letter carries a range-diff to the
        version before it, when that was mailed from this tree."""
        if not mail_sender(sender):
            raise Failure('mail: no sender: set git\'s user.name and user.email, or pass '
                          '--from="Name <address>"')
        directory = os.path.abspath(directory)
        if os.path.exists(directory) and not (os.path.isdir(directory) and
                                              not os.listdir(directory)):
            raise Failure("mail: %s is not a new or empty directory" % directory)
        if not shutil.which("b4"):
            raise Failure("mail: b4 checks the mail and is not installed "
                          "(tools/blkctx setup installs it)")
        # send what series/, kunit/ and selftests/ hold, no older, no newer
        self.exact()
        branch = self.git("symbolic-ref", "--short", "-q", "HEAD", check=False).strip()
        if not branch:
            raise Failure("mail: %s is not on a branch" % self.tree)
        tmp = tempfile.mkdtemp()
        try:
            # get_maintainer reads the patches: a first, plain copy for it
            plain = os.path.join(tmp, "plain")
            self.git("format-patch", "-q", "--find-renames", "-o", plain, "pristine..HEAD")
            to = self.recipients("--to", plain, ["--m", "--no-r", "--no-l"])
            if not to:
                raise Failure("mail: scripts/get_maintainer.pl names no maintainer to send to")
            cc = self.recipients("--cc", plain, ["--no-m", "--r", "--l"])
            version = []
            if reroll > 1:
                version = ["--reroll-count=%d" % reroll]
                previous = "blkctx-mail/v%d" % (reroll - 1)
                if self.git("rev-parse", "-q", "--verify", "refs/tags/" + previous,
                            check=False).strip():
                    version.append("--range-diff=%s-base..%s" % (previous, previous))
                else:
                    say("mail: v%d was not mailed from this tree: v%d has no range-diff"
                        % (reroll - 1, reroll))
            description = "%s\n\n%s\n\n%s" % (self.cover_subject(), self.cover_body(),
                                               self.based_on())
            # written and checked aside: DIR only ever holds mail that
            # passed (the sender's identity as committer: --from and
            # --signoff take it)
            name, address = sender_parts(sender)
            mail = os.path.join(tmp, "mail")
            self.git("-c", "core.abbrev=12", "-c", "branch.%s.description=%s" % (
                branch, description), "format-patch", "-q", "--zero-commit", "--no-signature",
                "--numbered", "--thread=shallow", "--cover-letter",
                "--cover-from-description=subject", "--from", "--signoff", "--find-renames",
                *version, *to, *cc, "-o", mail, "pristine..HEAD",
                env={"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": address})
            self.mail_check(mail, sender)
            os.makedirs(directory, exist_ok=True)
            for path in sorted(glob.glob(os.path.join(mail, "*.patch"))):
                shutil.move(path, os.path.join(directory, os.path.basename(path)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        # the versions a reroll compares with (lightweight, whatever the
        # user's tag config); mail-check's own are not sent
        if tag:
            ref = "refs/tags/blkctx-mail/v%d" % reroll
            head = self.git("rev-parse", "HEAD").strip()
            old = self.git("rev-parse", "-q", "--verify", ref, check=False).strip()
            if old and old != head:
                say("mail: v%d was mailed before from other commits; %s now names these"
                    % (reroll, ref))
            self.git("update-ref", ref, "HEAD")
            self.git("update-ref", ref + "-base", "pristine")
        say("mail: v%d, %d messages from %s in %s (send with git send-email %s/*.patch)" % (
            reroll, len(glob.glob(os.path.join(directory, "*.patch"))), sender, directory,
            directory))

    def mail_check(self, directory, sender):
        """What a maintainer gets from DIRECTORY with b4 am is the tree's
        series: every patch, in order, each giving its commit's tree,
        author and message, with the sender's sign-off after the stored
        ones."""
        commits = self.git("rev-list", "--reverse", "pristine..HEAD").split()
        files = sorted(glob.glob(os.path.join(directory, "*.patch")))
        covers = [f for f in files if f.endswith(COVER)]
        # one thread: every patch answers the cover letter
        msgid = None
        for path in covers[:1]:
            for line in lines_of(read_text(path)):
                m = re.fullmatch(r"Message-I[dD]: (<.*>)", line)
                if m:
                    msgid = m.group(1)
                    break
        if not msgid:
            raise Failure("mail: the cover letter has no Message-Id")
        for path in files:
            if path in covers:
                continue
            if "In-Reply-To: %s" % msgid not in lines_of(read_text(path)):
                    raise Failure("mail: %s does not answer the cover letter"
                                  % os.path.basename(path))
        tmp = tempfile.mkdtemp()
        try:
            self.check_with_b4(files, commits, sender, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def check_with_b4(self, files, commits, sender, tmp):
        mbox = b"".join(open(path, "rb").read() for path in files)
        os.makedirs(os.path.join(tmp, "b4"))
        os.makedirs(os.path.join(tmp, "split"))
        # The thread on stdin, as b4 takes one fetched from an archive (b4
        # 0.12 cannot read folded subjects from a local mbox file); -T keeps
        # the trailers as they are, -C keeps b4's cache out of HOME.
        run = subprocess.run(["b4", "am", "-T", "-C", "-m", "-", "-o", os.path.join(tmp, "b4"),
                              "-n", "series"], input=mbox, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=dict(os.environ, HOME=tmp))
        log = run.stdout.decode(errors="replace")
        if run.returncode != 0:
            sys.stderr.write(log)
            raise Failure("mail: b4 am cannot take the series")
        if "Total patches: %d" % len(commits) not in lines_of(log) or "WARNING" in log:
            sys.stderr.write(log)
            raise Failure("mail: b4 am does not see %d patches in one thread" % len(commits))
        split = os.path.join(tmp, "split")
        count = self.git("mailsplit", "-o" + split, os.path.join(tmp, "b4", "series.mbx"),
                         cwd=tmp).strip()
        if count != str(len(commits)):
            raise Failure("mail: b4 am gave another number of patches than %d" % len(commits))
        index = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        self.git("read-tree", "pristine", env=index)
        msg, patch = os.path.join(tmp, "msg"), os.path.join(tmp, "patch")
        for i, commit in enumerate(commits, 1):
            info = self.git("mailinfo", msg, patch, cwd=tmp,
                            stdin=read_text(os.path.join(split, "%04d" % i)))
            if self.run_git("apply", "--cached", patch, env=index).returncode != 0:
                raise Failure("mail: patch %d does not apply" % i)
            if self.git("write-tree", env=index).strip() != \
                    self.git("rev-parse", commit + "^{tree}").strip():
                raise Failure("mail: patch %d does not give the tree of %s" % (
                    i, self.git("log", "-1", '--format=%h ("%s")', commit).strip()))
            want = self.git("log", "-1", "--format=Author: %an%nEmail: %ae%nSubject: %s",
                            commit).strip()
            got = "\n".join(line for line in lines_of(info)
                            if re.match(r"(Author|Email|Subject): ", line))
            if got != want:
                raise Failure("mail: patch %d is not from its author or has another subject: %s"
                              % (i, got))
            want = self.git("interpret-trailers", "--if-exists", "addIfDifferentNeighbor",
                            "--trailer", "Signed-off-by: " + sender,
                            stdin=self.git("log", "-1", "--format=%b", commit), cwd=tmp)
            got = read_text(msg)
            if got.rstrip("\n") != want.rstrip("\n"):
                raise Failure("mail: patch %d's message is not its commit's with the sender's "
                              "sign-off last" % i)


def mail_sender(ident):
    """IDENT if it is "Name <address>" of a person: the series' own
    identity cannot sign off (cli.py checks the same before)."""
    if ident and "<%s>" % IDENT_EMAIL not in ident and re.fullmatch(r".+ <.+@.+>", ident):
        return ident
    return None


def sender_parts(sender):
    """The name and the address of "Name <address>"."""
    name, address = sender.rsplit(" <", 1)
    return name, address.rsplit("<", 1)[-1].rstrip(">")


def main(argv, lock=True):
    parser = argparse.ArgumentParser(prog="tree_step.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("prepare").add_argument("--force", action="store_true")
    sub.add_parser("export").add_argument("--force", action="store_true")
    sub.add_parser("reorder")
    p = sub.add_parser("mail")
    p.add_argument("--reroll", type=int, default=1)
    p.add_argument("--from", dest="sender", required=True)
    p.add_argument("dir")
    sub.add_parser("mail-check")
    sub.add_parser("patches")
    # git rebase's sequence editor for reorder, which holds the lock
    sub.add_parser("reorder-todo").add_argument("todo")
    opts = parser.parse_args(argv)

    def body():
        if opts.what == "reorder-todo":
            reorder_todo(opts.todo)
            return 0
        if opts.what == "patches":
            # no tree, no lock: the files of this checkout
            try:
                print("\n".join(common.patch_files()), flush=True)
            except BrokenPipeError:
                # a reader that stopped early (head) is no error
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        if lock:
            common.lock(" ".join(argv))
        tree = Tree()
        if opts.what == "prepare":
            tree.prepare(opts.force)
        elif opts.what == "export":
            tree.export(opts.force)
        elif opts.what == "reorder":
            tree.reorder()
        elif opts.what == "mail":
            tree.mail(opts.dir, opts.sender, opts.reroll)
        else:
            directory = tempfile.mkdtemp()
            try:
                tree.mail(os.path.join(directory, "mail"),
                          "blkctx mail check <mail-check@example.org>", tag=False)
            finally:
                shutil.rmtree(directory, ignore_errors=True)
        return 0

    return common.run_command(opts.what, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
