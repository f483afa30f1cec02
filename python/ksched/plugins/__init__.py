"""Built-in plugins: one module per plugin, named as upstream names it.

Each module holds the plugin's name, its failure reasons (the exact upstream text), its
default weight and the cluster events (with queueing hints) that can make a pod it
rejected schedulable (``events_to_register``). Filter and Score kernels of the built-ins
run in Rust (``rust/plugins/<plugin>.rs``); Python-side extension points
(DefaultPreemption's PostFilter, ...) live here too.
"""
