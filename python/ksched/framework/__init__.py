"""The scheduling framework: profiles, statuses, diagnosis and the plugin runtime."""
