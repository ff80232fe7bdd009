"""The mcudeploy PlatformIO platform: it never installs a package.

Every package in platform.json is optional and stays so, even for upload targets (PlatformIO
would otherwise make "uploader" packages mandatory and try its registry). The compiler comes
from PATH, or from PlatformIO's toolchain package when one is already installed; upload tools
likewise (see builder/main.py).
"""
from platformio.public import PlatformBase


class McudeployPlatform(PlatformBase):
    def configure_default_packages(self, options, targets):
        result = super().configure_default_packages(options, targets)
        for package in self.packages.values():
            package["optional"] = True
        return result
