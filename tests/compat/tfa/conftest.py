"""The fixture generator runs under TF 2.15 + tensorflow-addons only: never collect it."""

collect_ignore = ["make_tfa_fixtures.py"]
