"""Building frozen models from values already of their fields' types, without validation.

The replay makes a model for every execution, job, stage attempt, plan version and micro-batch
of a log: hundreds of thousands for a long streaming query. pydantic's `model_construct` walks
every field's aliases and defaults on each call (7 µs); a `Trusted` builder of one model class
checks once that the class has nothing `model_construct` would run for it (a post-init hook,
private attributes, extra fields) and then only puts the given values in field order.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_set = object.__setattr__


class Trusted(Generic[M]):
    """Builds instances of one model class from a value for every field, unvalidated.

    Every instance shares one set of field names (`model_fields_set`), so none holds its own.
    Raises `TypeError` when a field is missing or a name is not a field.

    >>> from pydantic import ConfigDict
    >>> class Point(BaseModel):
    ...     model_config = ConfigDict(frozen=True)
    ...     x: int
    ...     y: int = 0
    >>> make = Trusted(Point)
    >>> make(y=2, x=1)
    Point(x=1, y=2)
    >>> make(x=1)
    Traceback (most recent call last):
    ...
    TypeError: Point needs a value for y
    """

    __slots__ = ("_cls", "_names", "fields_set")

    def __init__(self, cls: type[M]) -> None:
        if (
            cls.__pydantic_post_init__
            or cls.__pydantic_root_model__
            or cls.__private_attributes__
            or cls.model_config.get("extra") == "allow"
        ):
            raise TypeError(f"{cls.__name__} needs model_construct")
        self._cls = cls
        self._names = tuple(cls.model_fields)
        self.fields_set = set(self._names)
        """The field names every instance shares."""

    def __call__(self, **values: Any) -> M:
        try:
            state = {name: values[name] for name in self._names}
        except KeyError as missing:
            raise TypeError(f"{self._cls.__name__} needs a value for {missing.args[0]}") from None
        if len(values) != len(state):
            unknown = sorted(set(values) - set(state))
            raise TypeError(f"{self._cls.__name__} has no field {', '.join(unknown)}")
        model = self._cls.__new__(self._cls)
        _set(model, "__dict__", state)
        _set(model, "__pydantic_fields_set__", self.fields_set)
        _set(model, "__pydantic_extra__", None)
        _set(model, "__pydantic_private__", None)
        return model


__all__ = ["Trusted"]
