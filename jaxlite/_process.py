"""This process's place among the processes of a job: index 0 of 1 until
jaxlite.distributed.initialize() says otherwise."""

_state = {"index": 0, "count": 1}


def index():
    return _state["index"]


def count():
    return _state["count"]


def set_place(index, count):
    _state["index"], _state["count"] = index, count
