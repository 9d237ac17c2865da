"""Run in a mechanism before it is used (runner.py): the network interfaces the sandbox sees, which must be only
loopback or none. Importing it runs nothing."""

import socket

if __name__ == "__main__":
    print(sorted(n for _, n in socket.if_nameindex()))
