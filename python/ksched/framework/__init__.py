"""The scheduling framework: profiles, statuses, diagnosis and the plugin runtime.

* :mod:`~ksched.framework.interface` - one Protocol per extension point (the plugin API);
* :mod:`~ksched.framework.status` - status codes and their meaning;
* :mod:`~ksched.framework.cycle_state` - per-attempt plugin state;
* :mod:`~ksched.framework.runtime` - :class:`~ksched.framework.runtime.Framework`, one per
  profile, runs the Python plugins with upstream's rules (waiting pods at Permit);
* :mod:`~ksched.framework.builtins` - PrioritySort, SchedulingGates, DefaultBinder;
* :mod:`~ksched.framework.builtin_events` - cluster events and queueing hints of the
  built-in plugins (until each plugin module provides ``events_to_register``);
* :mod:`~ksched.framework.diagnosis` - upstream's FitError message;
* :mod:`~ksched.framework.profile` - a profile and its Rust kernel configuration.
"""
