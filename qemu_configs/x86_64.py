# kunit.py --qemu_config for blkctx on x86_64: the tree's own x86_64 setup
# under plain emulation; BLKCTX_KVM=1 asks for KVM first (nested KVM can
# hang silently, so it is never the default).
import os

from ..qemu_config import QemuArchParams

_accel = ['-accel', 'tcg']
if os.environ.get('BLKCTX_KVM') == '1':
	_accel = ['-accel', 'kvm'] + _accel

QEMU_ARCH = QemuArchParams(linux_arch='x86_64',
			   kconfig='''
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y''',
			   qemu_arch='x86_64',
			   kernel_path='arch/x86/boot/bzImage',
			   kernel_command_line='console=ttyS0',
			   extra_qemu_params=['-bios', 'qboot.rom'] + _accel)
