#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The root of a guest, from Debian's packages of its architecture:

  root ARCH GUEST_DIR   the root in GUEST_DIR/ARCH/root, rebuilt only when
                        a package version or what the root takes changes

Everything lives in GUEST_DIR/ARCH: debs/ (the .deb files, downloaded once
per version), resolved (the packages as apt resolves them for a system of
the architecture with nothing installed, cached while apt's lists do not
change), root/ and root.manifest. apt must have the architecture's lists:
selftests_step.apt_ready sees to that before it runs this.
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402
from common import Failure  # noqa: E402
import procs  # noqa: E402
from procs import say  # noqa: E402

# Bump when the layout of the root changes, to rebuild every cached root.
ROOT_FORMAT = 5
# What the guest runs, and the packages it comes from. Debian's busybox, not
# busybox-static: the static build's shell runs its own applets before any
# program of $PATH, so a test's "mke2fs" would be busybox's, not e2fsprogs'.
# The root has the C library for e2fsprogs and mmc-utils anyway. sqlite3 is
# the database of the benchmark's phone workload.
DEBS = ["busybox", "e2fsprogs", "mmc-utils", "sqlite3"]
PROGS = ["bin/busybox", "sbin/mke2fs", "sbin/mkfs.ext4", "sbin/e2fsck", "sbin/fsck.ext4",
         "usr/bin/mmc", "usr/bin/sqlite3"]
FILES = ["etc/mke2fs.conf"]


def output(cmd, cwd=None):
    """CMD's standard output as text; its status is not looked at (apt-cache
    show fails for a name it does not know, and prints the others)."""
    return subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, errors="replace").stdout


# "Inst NAME (VERSION RELEASE [ARCH])" of apt-get -s; RELEASE may be missing
INST = re.compile(r"^Inst (\S+) \((\S+) .*\[(\S+)\]\)")


def resolve(darch, packages):
    """Every package PACKAGES need, as apt resolves them from the host's
    lists for a system of DARCH with nothing installed (an empty dpkg
    status), as sorted lines "name version architecture"."""
    with tempfile.NamedTemporaryFile(prefix="blkctx-status.") as status:
        done = subprocess.run(
            ["apt-get", "-s", "-q", "--no-install-recommends",
             "-o", "Dir::State::status=" + status.name, "-o", "Debug::NoLocking=1",
             "-o", "APT::Architecture=" + darch, "-o", "APT::Architectures=" + darch,
             "install"] + list(packages),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, errors="replace", check=False)
    found = sorted(" ".join(m.groups()) for m in map(INST.match, done.stdout.splitlines()) if m)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("E:")]
        raise Failure("guest: apt cannot install %s for %s: %s" % (
            " ".join(packages), darch, "; ".join(errors) or "status %d" % done.returncode))
    return found


def resolved(path, key, darch, resolve=resolve):
    """The packages of the root, as resolve gives them, from PATH when its
    first line is KEY. Only a resolution that worked is written: a failed
    one, cached, would fail every later run until apt's lists change."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().split("\n")
        if lines[0] == key:
            listed = [line for line in lines[1:] if line]
            if listed and all(len(line.split()) == 3 for line in listed):
                return listed
    except OSError:
        pass
    try:
        listed = resolve(darch, DEBS)
    except Failure as e:
        say(str(e))
        raise Failure("guest: cannot resolve the %s packages %s and their dependencies"
                      % (darch, " ".join(DEBS)))
    if not listed:
        raise Failure("guest: resolving %s for %s gave no package" % (" ".join(DEBS), darch))
    with open(path + ".tmp", "w") as f:
        f.write(key + "\n" + "\n".join(listed) + "\n")
    os.replace(path + ".tmp", path)
    return listed


def apt_key(darch):
    """What the versions depend on: apt's package lists and preferences."""
    digest = hashlib.sha256(("%s %s\n" % (darch, " ".join(DEBS))).encode())
    paths = sorted(glob.glob("/var/lib/apt/lists/*Packages*")) + \
        ["/etc/apt/preferences"] + sorted(glob.glob("/etc/apt/preferences.d/*"))
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        digest.update(("%s %d %d\n" % (path, st.st_size, int(st.st_mtime))).encode())
    return digest.hexdigest()


def download(directory, specs):
    """apt-get download SPECS into DIRECTORY; whether it worked."""
    cmd = ["apt-get", "download", "-q"]
    # as root, apt's _apt user may not reach DIRECTORY (in ~root)
    if os.getuid() == 0:
        cmd += ["-o", "APT::Sandbox::User=root"]
    return procs.run(["env", "-C", directory] + cmd + specs, "guest: apt-get download",
                     procs.progress_seconds(), out=sys.stderr) == 0


def deb_file(name, version, arch):
    return "%s_%s_%s.deb" % (name, version.replace(":", "%3a"), arch)


def fetch(directory, listed):
    """Download the packages of LISTED that DIRECTORY does not hold yet, and
    drop the .deb files LISTED does not name."""
    os.makedirs(directory, exist_ok=True)
    keep = []
    want = []
    for line in listed:
        name, version, arch = line.split()
        keep.append(deb_file(name, version, arch))
        if not os.path.isfile(os.path.join(directory, keep[-1])):
            want.append("%s:%s=%s" % (name, arch, version))
    if want:
        say("guest: downloading " + " ".join(want))
        if not download(directory, want):
            raise Failure("guest: apt-get download failed")
    for path in glob.glob(os.path.join(directory, "*.deb")):
        if os.path.basename(path) not in keep:
            os.unlink(path)
    for name in keep:
        if not os.path.isfile(os.path.join(directory, name)):
            raise Failure("guest: %s was not downloaded" % name)


def real(root, path):
    """PATH (relative to ROOT) with every symlink resolved inside ROOT,
    relative to ROOT and normalised; None when it does not exist."""
    path = start = path.lstrip("/")
    for _ in range(41):
        full = os.path.join(root, path)
        if not os.path.islink(full):
            if not os.path.exists(full):
                return None
            # a/./b and a/../b: the same file has one name
            return os.path.normpath("/" + path).lstrip("/") or "."
        link = os.readlink(full)
        path = link.lstrip("/") if link.startswith("/") else \
            os.path.join(os.path.dirname(path), link)
    say("guest: symlink loop at " + start)
    return None


def elf_needs(path):
    """PATH's interpreter (or None) and the shared libraries it needs."""
    interp = None
    for line in output(["readelf", "-lW", path]).splitlines():
        if "Requesting program interpreter: " in line and line.endswith("]"):
            interp = line.split("Requesting program interpreter: ", 1)[1][:-1]
    needed = []
    for line in output(["readelf", "-dW", path]).splitlines():
        if "(NEEDED)" in line and "[" in line and line.endswith("]"):
            needed.append(line.rsplit("[", 1)[1][:-1])
    return interp, needed


def copy_elf(source, root, path, triplet, copied):
    """Copy PATH from the tree SOURCE into ROOT, with its interpreter and
    every shared library it needs, recursively. Symlinks stay symlinks and
    hard links (mke2fs, mkfs.ext4) hard links: COPIED maps an inode of
    SOURCE to its path in ROOT."""
    path = path.lstrip("/")
    target = os.path.join(root, path)
    if os.path.lexists(target):
        return
    if real(source, path) is None:
        raise Failure("guest: %s is not in the packages" % path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    full = os.path.join(source, path)
    if os.path.islink(full):
        link = os.readlink(full)
        os.symlink(link, target)
        copy_elf(source, root, link if link.startswith("/") else
                 os.path.join(os.path.dirname(path), link), triplet, copied)
        return
    st = os.stat(full)
    inode = (st.st_dev, st.st_ino)
    if inode in copied:
        os.link(os.path.join(root, copied[inode]), target)
        return
    copied[inode] = path
    shutil.copy(full, target)
    interp, needed = elf_needs(full)
    if interp:
        copy_elf(source, root, interp, triplet, copied)
    for lib in needed:
        found = next((d + "/" + lib for d in ("lib/" + triplet, "usr/lib/" + triplet, "lib",
                                              "usr/lib")
                      if real(source, d + "/" + lib) is not None), None)
        if not found:
            raise Failure("guest: %s needs %s, which no package provides" % (path, lib))
        copy_elf(source, root, found, triplet, copied)


def applets(arch, debs, packages):
    """busybox's applets as paths (usr/bin/awk). busybox runs on the host to
    tell them; for another architecture, the host's build of the same
    busybox does."""
    hostarch = output(["dpkg", "--print-architecture"]).strip()
    if common.ARCHES[arch].deb_arch == hostarch:
        return output([os.path.join(packages, "bin", "busybox"), "--list-full"]).split()
    ours = glob.glob(os.path.join(debs, "busybox_*.deb"))
    if len(ours) != 1:
        raise Failure("guest: no busybox package in %s" % debs)
    version = output(["dpkg-deb", "-f", ours[0], "Version"]).strip()
    host = os.path.join(debs, "host")
    bb = os.path.join(host, deb_file("busybox", version, hostarch))
    if not os.path.isfile(bb):
        shutil.rmtree(host, ignore_errors=True)
        os.makedirs(host)
        if not download(host, ["busybox:%s=%s" % (hostarch, version)]) and \
                not download(host, ["busybox:" + hostarch]):
            raise Failure("guest: cannot download busybox for %s to list its applets" % hostarch)
        found = glob.glob(os.path.join(host, "busybox_*.deb"))
        if not found:
            raise Failure("guest: cannot download busybox for %s to list its applets" % hostarch)
        bb = found[0]
    extracted = os.path.join(host, "x")
    shutil.rmtree(extracted, ignore_errors=True)
    try:
        if procs.run(["dpkg-deb", "-x", bb, extracted], "guest: extracting",
                     procs.progress_seconds()) != 0:
            raise Failure("guest: cannot extract " + bb)
        return output([os.path.join(extracted, "bin", "busybox"), "--list-full"]).split()
    finally:
        shutil.rmtree(extracted, ignore_errors=True)


def rootfs(arch, guest_dir):
    """The root of ARCH's guest in GUEST_DIR/ARCH/root."""
    facts = common.ARCHES[arch]
    directory = os.path.join(guest_dir, arch)
    os.makedirs(directory, exist_ok=True)
    listed = resolved(os.path.join(directory, "resolved"), apt_key(facts.deb_arch),
                      facts.deb_arch)
    manifest = "format %d\nprogs %s\nfiles %s\n%s\n" % (
        ROOT_FORMAT, " ".join(PROGS), " ".join(FILES), "\n".join(listed))
    root = os.path.join(directory, "root")
    try:
        with open(os.path.join(directory, "root.manifest"), errors="replace") as f:
            current = f.read() == manifest
    except OSError:
        current = False
    if current and os.path.isdir(root):
        say("guest: %s root is up to date (%d packages)" % (arch, len(listed)))
        return
    say("guest: building the %s root from %d %s packages" % (arch, len(listed), facts.deb_arch))
    debs = os.path.join(directory, "debs")
    fetch(debs, listed)
    packages = os.path.join(directory, "pkgs")
    tmp = os.path.join(directory, "root.tmp")
    for path in (packages, tmp, root):
        shutil.rmtree(path, ignore_errors=True)
    try:
        os.makedirs(packages)
        for deb in sorted(glob.glob(os.path.join(debs, "*.deb"))):
            # in a session of its own: an interrupt stops its tar too
            if procs.run(["dpkg-deb", "-x", deb, packages], "guest: extracting",
                         procs.progress_seconds()) != 0:
                raise Failure("guest: cannot extract " + deb)
        for d in ("bin", "sbin", "usr/bin", "usr/sbin", "dev", "proc", "sys", "tmp", "run",
                  "mnt", "root", "etc"):
            os.makedirs(os.path.join(tmp, d))
        copied = {}
        for prog in PROGS:
            copy_elf(packages, tmp, prog, facts.triplet, copied)
        for name in FILES:
            found = real(packages, name)
            if found is None:
                raise Failure("guest: no %s in the packages" % name)
            os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
            shutil.copy(os.path.join(packages, found), os.path.join(tmp, name))
        # busybox for every applet no real program stands for (busybox has
        # a mke2fs of its own)
        programs = set()
        for top, dirs, files in os.walk(tmp):
            programs.update(n for n in files + dirs
                            if not os.path.isdir(os.path.join(top, n)) or
                            os.path.islink(os.path.join(top, n)))
        for applet in applets(arch, debs, packages):
            applet = applet.lstrip("/")
            if os.path.basename(applet) in programs:
                continue
            programs.add(os.path.basename(applet))
            os.makedirs(os.path.dirname(os.path.join(tmp, applet)), exist_ok=True)
            os.symlink("/bin/busybox", os.path.join(tmp, applet))
        if not os.path.islink(os.path.join(tmp, "bin", "sh")):
            raise Failure("guest: busybox has no sh applet")
        for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                           ("etc/group", "root:x:0:\n"), ("etc/mtab", "")):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        os.rename(tmp, root)
    finally:
        shutil.rmtree(packages, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(directory, "root.manifest"), "w") as f:
        f.write(manifest)
    size = output(["du", "-sh", root]).split()
    say("guest: %s root is %s" % (arch, size[0] if size else "?"))


def main(argv):
    def body():
        if len(argv) == 3 and argv[0] == "root" and argv[1] in common.ARCHES:
            rootfs(argv[1], argv[2])
            return 0
        print(__doc__.split("\n\n")[1].rstrip(), file=sys.stderr)
        return 2

    return common.run_command("guest", body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
