"""Functions `--span` names in tests/tests/pipelines/spans.rs: none of this file
calls stagebench."""
import time


def plain(n):
    time.sleep(0.001 * n)


class Shape:
    def area(self):
        return 1

    @classmethod
    def make(cls):
        return cls()

    @staticmethod
    def unit():
        return 1


def recurse(n):
    return 0 if n == 0 else recurse(n - 1)


def inner():
    time.sleep(0.001)


def outer():
    inner()
    inner()
