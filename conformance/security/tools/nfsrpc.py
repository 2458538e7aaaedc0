#!/usr/bin/env python3
"""Raw ONC RPC over TCP for the NFS checks that no stock client can send.

libnfs and the kernel split a path on '/' themselves, and clamp read
offsets, so a LOOKUP of one name holding '/' or a READ at offset 2^64-1
never leaves them. This sends those calls as they are (RFC 5531 records,
RFC 1813 NFSv3 and MOUNTv3, AUTH_NONE) and prints what the server answered.

Usage: nfsrpc.py PORT EXPORT lookup DIR... NAME   -> "status <n>"
       nfsrpc.py PORT EXPORT read DIR... FILE OFFSET
                                                -> "status <n> count <c> eof <0|1>"
DIR... are single components looked up one by one from the export's root.
"""
import random
import socket
import struct
import sys

PROG_NFS, PROG_MOUNT = 100003, 100005


def pad(b):
    return b + b"\0" * (-len(b) % 4)


def opaque(b):
    return struct.pack(">I", len(b)) + pad(b)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=20)

    def call(self, prog, vers, proc, args):
        xid = random.getrandbits(32)
        # call body: xid, CALL, rpcvers 2, prog, vers, proc, AUTH_NONE cred and verf
        msg = struct.pack(">IIIIIIIIII", xid, 0, 2, prog, vers, proc, 0, 0, 0, 0) + args
        self.s.sendall(struct.pack(">I", 0x80000000 | len(msg)) + msg)
        data = b""
        last = False
        while not last:
            (mark,) = struct.unpack(">I", self.recv(4))
            last = bool(mark & 0x80000000)
            data += self.recv(mark & 0x7FFFFFFF)
        rxid, mtype, stat = struct.unpack(">III", data[:12])
        if rxid != xid or mtype != 1:
            sys.exit("bad reply header")
        if stat != 0:
            sys.exit("rpc call denied (reply_stat %d)" % stat)
        # verifier: flavor, opaque body; then accept_stat
        vlen = struct.unpack(">I", data[16:20])[0]
        off = 20 + vlen + (-vlen % 4)
        (accept,) = struct.unpack(">I", data[off:off + 4])
        if accept != 0:
            sys.exit("rpc call not accepted (accept_stat %d)" % accept)
        return data[off + 4:]

    def recv(self, n):
        b = b""
        while len(b) < n:
            chunk = self.s.recv(n - len(b))
            if not chunk:
                sys.exit("connection closed by the server")
            b += chunk
        return b


def fhandle(body, off):
    (n,) = struct.unpack(">I", body[off:off + 4])
    return body[off + 4:off + 4 + n], off + 4 + n + (-n % 4)


def mount(c, export):
    body = c.call(PROG_MOUNT, 3, 1, opaque(export.encode()))
    (st,) = struct.unpack(">I", body[:4])
    if st != 0:
        sys.exit("MNT %s: status %d" % (export, st))
    fh, _ = fhandle(body, 4)
    return fh


def lookup(c, dirfh, name):
    body = c.call(PROG_NFS, 3, 3, opaque(dirfh) + opaque(name.encode()))
    (st,) = struct.unpack(">I", body[:4])
    if st != 0:
        return st, None
    fh, _ = fhandle(body, 4)
    return 0, fh


def main():
    port, export, op = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    args = sys.argv[4:]
    c = Conn(port)
    fh = mount(c, export)
    if op == "lookup":
        for name in args[:-1]:
            st, fh = lookup(c, fh, name)
            if st != 0:
                sys.exit("LOOKUP %s: status %d" % (name, st))
        st, _ = lookup(c, fh, args[-1])
        print("status %d" % st)
    elif op == "read":
        offset = int(args[-1])
        for name in args[:-1]:
            st, fh = lookup(c, fh, name)
            if st != 0:
                sys.exit("LOOKUP %s: status %d" % (name, st))
        body = c.call(PROG_NFS, 3, 6, opaque(fh) + struct.pack(">QI", offset, 4096))
        (st,) = struct.unpack(">I", body[:4])
        if st != 0:
            print("status %d count 0 eof 0" % st)
            return
        # post_op_attr: follows flag, then fattr3 (84 bytes) when set
        (follows,) = struct.unpack(">I", body[4:8])
        off = 8 + (84 if follows else 0)
        count, eof = struct.unpack(">II", body[off:off + 8])
        print("status 0 count %d eof %d" % (count, eof))
    else:
        sys.exit("unknown op %s" % op)


if __name__ == "__main__":
    main()
