# SPDX-License-Identifier: GPL-2.0
"""The shell that remains passes shellcheck, the Python parses, and the
guest's /init, as the initramfs gets it, is POSIX sh that shellcheck
passes."""

import ast
import glob
import os
import shutil

import selftests_step
import support


class Lint(support.Case):

    def setUp(self):
        super().setUp()
        if not shutil.which("shellcheck"):
            self.fail("no shellcheck (tools/blkctx setup installs it)")

    def test_shell(self):
        """shellcheck tools/blkctx tools/lib/* .ci/run"""
        # blkctx.sh sources setup.sh: checked alone, shellcheck cannot see
        # where their shared globals are set or used (SC2034, SC2153, SC2154)
        files = ["tools/blkctx"] + sorted(
            os.path.relpath(f, support.REPO)
            for f in glob.glob(os.path.join(support.LIB, "*.sh"))) + [".ci/run"]
        done = support.run(["shellcheck", "-x", "-e", "SC2034,SC2153,SC2154"] + files,
                           cwd=support.REPO)
        self.assertEqual(done.status, 0, done.out)

    def test_python_parses(self):
        """python3 parses tools/lib/*.py"""
        # without writing bytecode: nothing left behind in the checkout
        for path in sorted(glob.glob(os.path.join(support.LIB, "*.py")) +
                           glob.glob(os.path.join(support.TESTS, "*.py"))):
            with open(path) as f:
                ast.parse(f.read(), path)

    def test_init(self):
        """shellcheck the guest's /init"""
        init = self.path("init")
        selftests_step.write_init(init, 120)
        done = support.run(["shellcheck", "-s", "sh", init])
        self.assertEqual(done.status, 0, done.out)

