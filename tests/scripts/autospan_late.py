"""Imported late, inside a function, by autospan_user.py."""


def work():
    return 42
