"""PID 1 of one LocalEnvironment trial: build the trial's mounts, become its root, hold it open.

    unshare --mount --pid --fork --ipc --propagation private python3 -I -S trial_init.py SPEC

SPEC (JSON, written by environments/namespace.py) lists the mounts. They are made with the
mount(2) system call directly: one process instead of one `mount` process per mount, which
made starting a trial several times slower (pivot_root(2) too, where its number is known:
no `pivot_root` process, no subprocess module). `pivot_root` makes the trial's root the
namespace's own root and the host's tree is let go, so nothing above the root exists in
there. Prints `ready`, reaps the orphans every trial makes, and ends (ending every process of
the trial) when its stdin closes. Standard library only; everything is imported before the
host's tree goes, as the interpreter's own files are not in the root.
"""

import ctypes
import json
import os
import signal
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
MNT_DETACH = 2
# pivot_root(2) has no libc wrapper: its system call number, per machine.
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)
# statvfs flags that a read-only remount must keep (a user namespace may not drop them).
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_RELATIME = 4096  # statvfs says relatime with its own bit
KEPT_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME

_libc = ctypes.CDLL(None, use_errno=True)


def encode(text):
    return text.encode() if text is not None else None


def mount(source, target, fstype=None, flags=0, data=None):
    if _libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {source or fstype} on {target}: {os.strerror(error)}")


def bind(source, target, read_only):
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        # nosuid too: no setuid program of the host's lets the agent's uid become another.
        flags = os.statvfs(target).f_flag
        kept = (flags & KEPT_FLAGS) | (MS_RELATIME if flags & ST_RELATIME else 0)
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | kept)


def loopback_up():
    """`ip link set lo up` of the trial's own network namespace, without iproute2 and with
    ctypes alone (importing socket and fcntl would cost this start more than the call)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    request = ctypes.create_string_buffer(b"lo", 40)  # struct ifreq: name, then flags (short)
    fd = _libc.socket(2, 2, 0)  # AF_INET, SOCK_DGRAM
    if fd < 0:
        raise OSError(ctypes.get_errno(), "socket for the loopback")
    try:
        for call, value in ((siocgifflags, None), (siocsifflags, iff_up)):
            if value is not None:
                flags = int.from_bytes(request.raw[16:18], "little") | value
                ctypes.memmove(ctypes.addressof(request) + 16, flags.to_bytes(2, "little"), 2)
            if _libc.ioctl(fd, call, request) != 0:
                raise OSError(ctypes.get_errno(), "cannot bring up the trial's loopback")
    finally:
        os.close(fd)


def pivot_root(new_root, put_old):
    if SYS_PIVOT_ROOT is None:  # another machine: util-linux's program does it
        import subprocess

        subprocess.run(["pivot_root", new_root, put_old], check=True,
                       env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        return
    if _libc.syscall(SYS_PIVOT_ROOT, encode(new_root), encode(put_old)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"pivot_root into the trial's root: {os.strerror(error)}")


def make_point(path, is_dir):
    if is_dir:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()


def build(spec):
    root = spec["root"]
    bind(root, root, False)  # the root must be a mount point of its own to become `/`
    dev = root + "/dev"
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=512k")
    for name in spec["devices"]:
        make_point(f"{dev}/{name}", False)
        mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name in ("pts", "shm"):
        os.mkdir(f"{dev}/{name}")
    try:
        mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=620")
    except OSError:
        mount("/dev/pts", dev + "/pts", None, MS_BIND | MS_REC)
    links = (("ptmx", "pts/ptmx"), ("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
             ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"))
    for link, target in links:
        os.symlink(target, f"{dev}/{link}")
    # This PID namespace's own procfs: only the trial's processes are visible.
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    scratch = root + spec["scratch"]
    mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={spec['scratch_mb']}m,nr_inodes={spec['scratch_inodes']},mode=755")
    for name, target, mode in spec["scratch_dirs"]:
        os.mkdir(f"{scratch}/{name}")
        os.chmod(f"{scratch}/{name}", mode)
        make_point(root + target, True)
        bind(f"{scratch}/{name}", root + target, False)
    for source, target, read_only in spec["binds"]:
        # Made again here: a mount point under /tmp is hidden by the scratch tmpfs.
        make_point(root + target, os.path.isdir(source))
        bind(source, root + target, read_only)
    for path, mode in spec["modes"]:  # of folders mounted from the host: the folder itself
        os.chmod(root + path, mode)
    if spec["loopback"]:
        loopback_up()
    old = root + spec["old_root"]
    os.makedirs(old, exist_ok=True)
    os.chdir(root)
    pivot_root(".", "." + spec["old_root"])
    os.chdir("/")
    if _libc.umount2(spec["old_root"].encode(), MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), "cannot let go of the host's tree")
    os.rmdir(spec["old_root"])


def reap(*_):
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def main():
    with open(sys.argv[1]) as handle:
        spec = json.load(handle)
    try:
        build(spec)
    except Exception as exc:  # OSError, or the pivot_root program's failure
        sys.stderr.write(f"{exc}\n")
        return 1
    signal.signal(signal.SIGCHLD, reap)
    os.write(1, b"ready\n")
    while os.read(0, 4096):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
