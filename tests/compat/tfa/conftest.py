"""The fixture generators run under TF 2.15 + tensorflow-addons only: never collect them."""

collect_ignore = [
    "make_tfa_fixtures.py",
    "make_monotonic_reference.py",
    "make_beam_score_reference.py",
    "make_nmt_port_fixtures.py",
]
