# kunit.py --qemu_config for blkctx on 32-bit ARM: qemu-system-arm -M virt,
# under plain emulation.  Build with --cross_compile=arm-linux-gnueabihf-.
# HIGHMEM builds the bounce buffer code, which carries the write stream too;
# VFPv3 runs Debian's armhf programs in the kselftest guest, PSCI stops it.
from ..qemu_config import QemuArchParams

QEMU_ARCH = QemuArchParams(linux_arch='arm',
			   kconfig='''
CONFIG_ARCH_VIRT=y
CONFIG_SERIAL_AMBA_PL010=y
CONFIG_SERIAL_AMBA_PL010_CONSOLE=y
CONFIG_SERIAL_AMBA_PL011=y
CONFIG_SERIAL_AMBA_PL011_CONSOLE=y
CONFIG_HIGHMEM=y
CONFIG_VFP=y
CONFIG_VFPv3=y
CONFIG_ARM_PSCI=y''',
			   qemu_arch='arm',
			   kernel_path='arch/arm/boot/zImage',
			   kernel_command_line='console=ttyAMA0',
			   extra_qemu_params=['-machine', 'virt', '-cpu', 'cortex-a15'])
