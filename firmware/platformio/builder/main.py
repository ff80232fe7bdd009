"""SCons builder of the mcudeploy PlatformIO platform.

A project mcudeploy generated: it compiles exactly the sources and flags of the project's build
spec (the JSON file named by the ``custom_mcudeploy_build`` option, written by mcudeploy from
``mcudeploy.device.build.firmware_build_spec``) with the spec's compiler (``cc``: arm-none-eabi-gcc,
or a RISC-V board's riscv64-unknown-elf-gcc) and its binutils, found on PATH,
links ``firmware.elf`` (``$cc $ldflags -T linker_script objects $libs``, as the direct build
does) and makes ``firmware.bin``; target ``sizing`` links the same objects against the spec's
unbounded ``sizing_linker_script``, to measure a firmware too large for its board; target ``objects``
compiles without linking (mcudeploy then writes the stack guard its objects need into the spec's ldflags). Nothing
comes from PlatformIO's registry: no framework, no library finder, no toolchain package (one
already installed is used first, as PlatformIO puts it on PATH).

A user's own project (no build spec; `board =` one of the platform's boards/, by mcudeploy's name or
PlatformIO's, or one of the project's own): PlatformIO's usual program build (src/, lib_deps such as
the library.json of a `mcudeploy compile` folder, build_flags) for the board's core (user_program).

Upload, by ``upload_protocol``:
  custom          the project's ``upload_command`` (mcudeploy starts QEMU with it);
  picotool        Raspberry Pi's ``picotool load`` on PATH (the board in BOOTSEL mode); without it, the
                  firmware.uf2 mcudeploy writes beside the ELF, copied to the board's boot drive by hand;
  bossac          Arduino's ``bossac`` on PATH, over upload_port (the bootloader's USB serial);
  jlink           SEGGER's ``JLinkExe`` on PATH (loads firmware.bin at the flash origin over JTAG);
  mbed            copy firmware.bin to the board's USB disk (PlatformIO's own disk finder);
  stlink, cmsis-dap
                  OpenOCD (PlatformIO's tool-openocd package when installed, else ``openocd`` on
                  PATH), or for stlink ``st-flash`` on PATH.
A missing upload tool fails the upload target only, with one sentence; building never needs one.
"""
import hashlib
import json
import os
import shutil
import sys

from SCons.Script import COMMAND_LINE_TARGETS, AlwaysBuild, Default, DefaultEnvironment

env = DefaultEnvironment()
platform = env.PioPlatform()
board = env.BoardConfig()
project_dir = env.subst("$PROJECT_DIR")


def fail(sentence):
    sys.stderr.write("Error: %s\n" % sentence)
    env.Exit(1)


def project_path(path):
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(project_dir, path))


def object_path(source):
    # Mirror the source tree under the build dir so two files with one base name never clash.
    rel = os.path.relpath(source, project_dir)
    if rel.startswith(".."):
        digest = hashlib.sha1(os.path.dirname(source).encode("utf-8")).hexdigest()[:10]
        rel = os.path.join("_outside", digest, os.path.basename(source))
    return os.path.join("$BUILD_DIR", "obj", os.path.splitext(rel)[0] + ".o")


def size_targets(elf):
    # PlatformIO's own RAM / Flash lines (from `size -B`, against the manifest's maximum sizes).
    env.Replace(PIOMAINPROG=elf)
    AlwaysBuild(env.Alias("checkprogsize", elf, env.VerboseAction(env.CheckUploadSize, "Checking size $PIOMAINPROG")))
    AlwaysBuild(env.Alias("size", elf, env.VerboseAction("$SIZETOOL -A -d $SOURCES", "Calculating size $SOURCE")))


def binary_of(elf):
    return env.Command(os.path.join("$BUILD_DIR", "${PROGNAME}.bin"), elf,
                       env.VerboseAction("$OBJCOPY -O binary $SOURCE $TARGET", "Building $TARGET"))


def mcudeploy_firmware(spec_path):
    """The firmware mcudeploy generated: exactly its build spec's sources and flags."""
    with open(spec_path, encoding="utf-8") as fp:
        spec = json.load(fp)
    cc = spec.get("cc", "arm-none-eabi-gcc")
    prefix = cc[:-len("gcc")] if cc.endswith("gcc") else "arm-none-eabi-"
    linker_script = project_path(spec["linker_script"])
    sizing_script = project_path(spec["sizing_linker_script"]) if spec.get("sizing_linker_script") else None

    env.Replace(
        CC=cc,
        AS=cc,
        LINK=cc,
        OBJCOPY=prefix + "objcopy",
        SIZETOOL=prefix + "size",
        PROGNAME="firmware",
        PROGSUFFIX=".elf",
        CPPPATH=[project_path(d) for d in spec["include_dirs"]],
        MCUD_CFLAGS=list(spec["cflags"]),
        MCUD_LDFLAGS=list(spec["ldflags"]),
        MCUD_LIBS=list(spec.get("libs", [])),
        # Exactly the spec's flags: no CCFLAGS, CPPDEFINES or build_flags from anywhere else.
        CCCOM="$CC $MCUD_CFLAGS $_CPPINCFLAGS -c $SOURCE -o $TARGET",
        ASPPCOM="$AS $MCUD_CFLAGS $_CPPINCFLAGS -c $SOURCE -o $TARGET",
        LINKCOM="$LINK $MCUD_LDFLAGS -T $LDSCRIPT $SOURCES $MCUD_LIBS -o $TARGET",
        LDSCRIPT=linker_script,
        UPLOADCMD=env.get("UPLOADCMD", ""),
    )
    if not shutil.which(cc, path=env["ENV"]["PATH"]):
        fail("the compiler %s is not on PATH; install %s"
             % (cc, spec.get("packages", "gcc-arm-none-eabi libnewlib-arm-none-eabi")))

    objects = []
    for source in spec["sources"]:
        source = project_path(source)
        objects.extend(env.Object(object_path(source), source))
    # Headers forced in with `-include FILE` are invisible to SCons's scanner: name them as dependencies.
    cflags = spec["cflags"]
    forced = [project_path(cflags[i + 1]) for i, flag in enumerate(cflags[:-1]) if flag == "-include"]
    if forced:
        env.Depends(objects, forced)

    env.Alias("objects", objects)  # compiled, not linked: mcudeploy sizes the stack guard from their call graphs
    elf = env.Program(os.path.join("$BUILD_DIR", "${PROGNAME}"), objects)
    env.Depends(elf, [linker_script, spec_path])
    if sizing_script:
        # The same objects linked into unbounded regions: a firmware too large for the board still links,
        # so mcudeploy can say by how many bytes it is over (`pio run -t sizing`, never uploaded).
        sizing = env.Program(os.path.join("$BUILD_DIR", "${PROGNAME}-sizing"), objects, LDSCRIPT=sizing_script)
        env.Depends(sizing, [sizing_script, spec_path])
        env.Alias("sizing", sizing)
    return elf


def user_program():
    """A user's own project (no build spec): PlatformIO's usual program build (src/, the libraries its
    finder resolves from lib_deps and lib/, build_flags) with the board's compiler from PATH (build.cc, else
    arm-none-eabi-gcc; build.libc_flags, else newlib-nano's specs), for the board's
    core (the manifest's build.cpu_flags; else build.cpu, Thumb, soft float). Start-up code and a linker
    script are the project's: board_build.ldscript, else the toolchain's default (an image that links,
    not one that boots)."""
    cc = board.get("build.cc", "arm-none-eabi-gcc")  # a board with a compiler of its own names it (RISC-V)
    prefix = cc[:-len("gcc")]
    if not shutil.which(cc, path=env["ENV"]["PATH"]):
        fail("the compiler %s is not on PATH; install %s"
             % (cc, board.get("build.cc_packages", "gcc-arm-none-eabi libnewlib-arm-none-eabi")))
    cpu = list(board.get("build.cpu_flags", [])) or ["-mcpu=%s" % board.get("build.cpu", "cortex-m4"), "-mthumb"]
    own = list(board.get("build.libc_flags", []))  # its C library's specs, for compiling (headers) and linking
    libc = own or ["--specs=nano.specs", "--specs=nosys.specs"]
    env.Replace(CC=cc, AS=cc, LINK=cc, AR=prefix + "gcc-ar", RANLIB=prefix + "gcc-ranlib",
                OBJCOPY=prefix + "objcopy", SIZETOOL=prefix + "size", PROGNAME="firmware",
                PROGSUFFIX=".elf", ARFLAGS=["rc"], UPLOADCMD=env.get("UPLOADCMD", ""))
    env.Append(CCFLAGS=cpu + own + ["-O2", "-ffunction-sections", "-fdata-sections"], ASFLAGS=cpu,
               LINKFLAGS=cpu + libc + ["-Wl,--gc-sections"], LIBS=["m"])
    ldscript = env.GetProjectOption("board_build.ldscript", "") or board.get("build.ldscript", "")
    if ldscript:
        env.Append(LINKFLAGS=["-T", project_path(ldscript)])
    return env.BuildProgram()


spec_option = env.GetProjectOption("custom_mcudeploy_build", "")
spec_path = os.path.join(project_dir, spec_option or "mcudeploy-build.json")
if os.path.isfile(spec_path):
    elf = mcudeploy_firmware(spec_path)
    size_targets(elf)
elif spec_option:
    fail("the build spec %s is missing; regenerate the project with `mcudeploy flash`" % spec_path)
else:
    elf = user_program()  # PlatformIO's program build checks the size itself
binary = binary_of(elf)
Default([elf, binary])
env.Alias("buildprog", [elf, binary])


# ---------------------------------------------------------------- upload


def openocd_command(protocol):
    interface = {"stlink": "interface/stlink.cfg", "cmsis-dap": "interface/cmsis-dap.cfg"}[protocol]
    target = board.get("debug.openocd_target", "")
    if not target:
        fail("board %s names no OpenOCD target (debug.openocd_target)" % env.subst("$BOARD"))
    package = platform.get_package_dir("tool-openocd")
    if package and os.path.isfile(os.path.join(package, "bin", "openocd")):
        tool = [os.path.join(package, "bin", "openocd"), "-s", os.path.join(package, "openocd", "scripts")]
    elif shutil.which("openocd"):
        tool = ["openocd"]
    else:
        return None
    return tool + ["-f", interface, "-f", "target/%s.cfg" % target,
                   "-c", '"program {$SOURCE} verify reset; shutdown;"']


def upload_actions(protocol):
    """(source node, actions) for the protocol, or a sentence saying what is missing."""
    if protocol == "custom":
        if not env.subst("$UPLOADCMD"):
            return "upload_protocol = custom needs an upload_command"
        return elf, [env.VerboseAction("$UPLOADCMD", "Uploading $SOURCE")]
    if protocol == "mbed":
        return binary, [env.VerboseAction(env.AutodetectUploadPort, "Looking for the board's USB disk..."),
                        env.VerboseAction(env.UploadToDisk, "Uploading $SOURCE")]
    if protocol in ("stlink", "cmsis-dap"):
        command = openocd_command(protocol)
        if command:
            return elf, [env.VerboseAction(" ".join(command), "Uploading $SOURCE")]
        if protocol == "stlink" and shutil.which("st-flash"):
            origin = board.get("upload.offset_address", "0x08000000")
            return binary, [env.VerboseAction("st-flash --reset write $SOURCE %s" % origin, "Uploading $SOURCE")]
        return ("the %s upload needs OpenOCD (PlatformIO's tool-openocd package or `openocd` on PATH)%s, "
                "and none is installed" % (protocol, " or `st-flash`" if protocol == "stlink" else ""))
    if protocol == "picotool":
        if shutil.which("picotool"):
            return elf, [env.VerboseAction("picotool load -x -t elf $SOURCE", "Uploading $SOURCE")]
        return ("the picotool upload needs Raspberry Pi's picotool on PATH, and none is installed; or hold BOOTSEL "
                "while plugging the board in and copy firmware.uf2 (beside firmware.elf) to its %s drive"
                % board.get("upload.uf2_drive", "boot"))
    if protocol == "bossac":
        if shutil.which("bossac"):
            port = env.subst("$UPLOAD_PORT")
            if not port:
                return "the bossac upload needs upload_port (the bootloader's serial port, after a double tap of RESET)"
            return binary, [env.VerboseAction("bossac -d --port=%s -U -i -e -w $SOURCE -R" % port, "Uploading $SOURCE")]
        return ("the bossac upload needs Arduino's bossac on PATH (it comes with the Arduino mbed_nano core), "
                "and none is installed")
    if protocol == "jlink":
        if shutil.which("JLinkExe"):
            script = os.path.join(env.subst("$BUILD_DIR"), "upload.jlink")
            with open(script, "w") as f:
                f.write("r\nh\nloadbin %s,%s\nr\ng\nexit\n"
                        % (env.subst("$BUILD_DIR/${PROGNAME}.bin"), board.get("upload.offset_address", "0x0")))
            return binary, [env.VerboseAction("JLinkExe -device %s -if JTAG -speed 4000 -jtagconf -1,-1 -autoconnect 1 "
                                              "-CommanderScript %s" % (board.get("upload.jlink_device", ""), script),
                                              "Uploading $SOURCE")]
        return "the jlink upload needs SEGGER's JLinkExe on PATH (the J-Link Software Pack), and none is installed"
    return "upload protocol '%s' is not supported by the mcudeploy platform" % protocol


if any(t.startswith("upload") for t in COMMAND_LINE_TARGETS):
    result = upload_actions(env.subst("$UPLOAD_PROTOCOL"))
    if isinstance(result, str):
        fail(result)
    source, actions = result
    AlwaysBuild(env.Alias("upload", source, actions))
