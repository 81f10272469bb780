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


def main() -> int:
	tree, config = sys.argv[1], os.path.abspath(sys.argv[2])
	sys.path.insert(0, os.path.join(tree, 'tools', 'testing', 'kunit'))
	import kunit_kernel  # pylint: disable=import-outside-toplevel

	_, ops = kunit_kernel._get_qemu_ops(config, None, None)
	# kunit.py adds its own shutdown parameter; the guests stop themselves,
	# and a guest that KUnit would reboot never gets to its tests
	console = ops._kernel_command_line.replace(' kunit_shutdown=reboot', '')
	if 'kunit' in console:
		raise SystemExit('qemu_params: unexpected kernel command line: ' + console)
	print('qemu-system-' + ops._qemu_arch)
	print(ops._kernel_path)
	print(console)
	print(ops._serial)
	for param in ops._extra_qemu_params:
		print(param)
	return 0


if __name__ == '__main__':
	sys.exit(main())
