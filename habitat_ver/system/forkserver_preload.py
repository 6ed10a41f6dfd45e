"""Imported by the forkserver, and nothing else, before it forks any worker.

Importing this module is what it does: the forkserver (and so every process
forked from it) runs torch on one thread
(:func:`habitat_ver.system.worker_threads.use_one_thread`), and the server is
named in the kernel (:mod:`habitat_ver.system.process_names`).  The workers call
it again at their start, so a worker forked some other way is covered too.
"""

from habitat_ver.system.process_names import FORKSERVER, name_this_thread
from habitat_ver.system.worker_threads import use_one_thread

use_one_thread()
name_this_thread(FORKSERVER)
