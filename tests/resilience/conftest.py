"""The worker scripts run as processes of a test, never as test modules."""

collect_ignore = ["jax_worker.py", "tensorflow_worker.py"]
