# The first code that runs in the sandbox, before the untrusted script: isolation.py passes this file's text to
# `python -c`, with argv: drop_uid drop_gid ('-' = keep), then the limits (cpu_seconds address_space_bytes
# file_size_bytes open_files processes), then the script, which runs as __main__ once all of them are set
# (isolation.py says why the limits are set here and not in a preexec_fn).
#
# The script runs in these same __main__ globals, so this program has no docstring (it would be the script's
# __doc__) and deletes every name it binds before the script starts. Importing it runs nothing.

import _sitebuiltins
import builtins
import os
import resource
import sys

if __name__ == "__main__":
    u, g, c, a, f, o, n, s = sys.argv[1:9]
    if u != "-":
        os.setgroups([])
        os.setgid(int(g))
        os.setuid(int(u))
    for k, v in (
        (resource.RLIMIT_CPU, (int(c), int(c) + 1)),
        (resource.RLIMIT_AS, (int(a),) * 2),
        (resource.RLIMIT_FSIZE, (int(f),) * 2),
        (resource.RLIMIT_NOFILE, (int(o),) * 2),
        (resource.RLIMIT_NPROC, (int(n),) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(k, v)
    sys.argv = [s]
    __file__ = s
    # `-S` skips site, and with it the exit()/quit() builtins programs end with: the same objects, site-packages off
    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    del u, g, c, a, f, o, n, s, k, v, os, sys, resource, builtins, _sitebuiltins
    # runs in this __main__ module, as `python main.py` would (runpy would cost ~40 ms of imports per run)
    exec(compile(open(__file__, "rb").read(), __file__, "exec"))
