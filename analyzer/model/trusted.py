"""Building frozen models from values already of their fields' types, without validation.

The replay makes a model for every execution, job, stage attempt, plan version and micro-batch
of a log: hundreds of thousands for a long streaming query. pydantic's `model_construct` walks
every field's aliases and defaults on each call (7 µs), and a pydantic dataclass's `__init__`
validates every field. A `Trusted` builder of one class checks once that the class has nothing
either would run for it (a post-init hook, private attributes, extra fields) and then only puts
the given values in field order: into the model's field dict, or into the dataclass's slots.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

M = TypeVar("M")

_set = object.__setattr__
_new = object.__new__


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of the slots of dataclass `cls`, in field order: they store a value as is,
    frozen or not, and cost half of `object.__setattr__`, which finds the slot by name."""
    return tuple(vars(cls)[f.name].__set__ for f in dataclasses.fields(cls))


class Trusted(Generic[M]):
    """Builds instances of one frozen class, a pydantic `BaseModel` or a slotted pydantic
    dataclass, from a value for every field, unvalidated.

    Every model instance shares one set of field names (`model_fields_set`), so none holds its
    own. Raises `TypeError` when a field is missing or a name is not a field.

    >>> from pydantic.dataclasses import dataclass
    >>> @dataclass(frozen=True, slots=True)
    ... class Point:
    ...     x: int
    ...     y: int = 0
    >>> make = Trusted(Point)
    >>> make(y=2, x=1)
    Point(x=1, y=2)
    >>> make.replace(make(x=1, y=2), y=3)
    Point(x=1, y=3)
    >>> make(x=1)
    Traceback (most recent call last):
    ...
    TypeError: Point needs a value for y
    """

    __slots__ = ("_cls", "_names", "_pairs", "fields_set")

    def __init__(self, cls: type[M]) -> None:
        if dataclasses.is_dataclass(cls):
            if "__slots__" not in vars(cls) or hasattr(cls, "__post_init__"):
                raise TypeError(f"{cls.__name__} is not a slotted dataclass without a post-init")
            self._names = tuple(f.name for f in dataclasses.fields(cls))
            self._pairs: tuple[tuple[str, Callable[[Any, Any], None]], ...] | None = tuple(
                zip(self._names, slot_setters(cls), strict=True)
            )
        elif issubclass(cls, BaseModel):
            if (
                cls.__pydantic_post_init__
                or cls.__pydantic_root_model__
                or cls.__private_attributes__
                or cls.model_config.get("extra") == "allow"
            ):
                raise TypeError(f"{cls.__name__} needs model_construct")
            self._names = tuple(cls.model_fields)
            self._pairs = None
        else:
            raise TypeError(f"{cls.__name__} is neither a pydantic model nor a dataclass")
        self._cls = cls
        self.fields_set = set(self._names)
        """The field names every model instance shares."""

    def __call__(self, **values: Any) -> M:
        if len(values) != len(self._names):
            unknown = sorted(set(values) - set(self._names))
            if unknown:
                raise TypeError(f"{self._cls.__name__} has no field {', '.join(unknown)}")
        instance: Any = _new(self._cls)
        pairs = self._pairs
        try:
            if pairs is not None:
                for name, setter in pairs:
                    setter(instance, values[name])
                return instance  # type: ignore[no-any-return]
            state = {name: values[name] for name in self._names}
        except KeyError as missing:
            raise TypeError(f"{self._cls.__name__} needs a value for {missing.args[0]}") from None
        _set(instance, "__dict__", state)
        _set(instance, "__pydantic_fields_set__", self.fields_set)
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        return instance  # type: ignore[no-any-return]

    def replace(self, instance: M, **changes: Any) -> M:
        """A copy of `instance` with `changes` to some of its fields, unvalidated."""
        return self(**{name: getattr(instance, name) for name in self._names} | changes)


__all__ = ["Trusted", "slot_setters"]
