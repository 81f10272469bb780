#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What a guest's QEMU command line takes from qemu_configs/ARCH.py.

kunit.py loads the file with --qemu_config; this loads it the same way,
through the tree's own kunit_kernel, so that the kselftest guests boot
exactly the machine the KUnit suites boot, with no second copy of it.

Usage: qemu_params.py TREE CONFIG
Prints one value per line: the QEMU binary, the kernel image path under
the build directory, the console part of the kernel command line, the
serial option, then each extra QEMU parameter.
"""
import os
import sys
from typing import List, NamedTuple


class QemuParams(NamedTuple):
	"""The machine of one qemu_configs/ARCH.py."""
	binary: str
	kernel_path: str
	console: str
	serial: str
	extra: List[str]


def load(tree: str, config: str) -> QemuParams:
	"""CONFIG read by TREE's kunit_kernel, as kunit.py --qemu_config reads it."""
	sys.path.insert(0, os.path.join(tree, 'tools', 'testing', 'kunit'))
	import kunit_kernel  # pylint: disable=import-outside-toplevel,import-error

	_, ops = kunit_kernel._get_qemu_ops(os.path.abspath(config), None, None)
	# kunit.py adds its own shutdown parameter; the guests stop themselves,
	# and a guest that KUnit would reboot never gets to its tests
	console = ops._kernel_command_line.replace(' kunit_shutdown=reboot', '')
	if 'kunit' in console:
		raise ValueError('qemu_params: unexpected kernel command line: ' + console)
	return QemuParams('qemu-system-' + ops._qemu_arch, ops._kernel_path, console,
			  ops._serial, list(ops._extra_qemu_params))


def main() -> int:
	try:
		params = load(sys.argv[1], sys.argv[2])
	except ValueError as e:
		raise SystemExit(str(e)) from e
	print(params.binary)
	print(params.kernel_path)
	print(params.console)
	print(params.serial)
	for param in params.extra:
		print(param)
	return 0


if __name__ == '__main__':
	sys.exit(main())
