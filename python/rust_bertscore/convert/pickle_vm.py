"""A pickle machine that builds plain data only, for files from outside (see :mod:`.torch_pickle`).

``pickle.Unpickler`` runs whatever a pickle asks of the objects on its stack: BUILD sets any
attribute of any object (a stand-in the allow-list handed out, a module function's defaults),
REDUCE calls what it is given, SETITEM hashes keys of any depth. :class:`Machine` runs a pickle's
opcodes itself, one at a time, and does only this:

* it builds tuples, lists, dicts, strings, bytes, numbers, booleans and None;
* a global (GLOBAL, STACK_GLOBAL, INST) is asked of ``resolve``, which refuses what it does not
  know; REDUCE hands the callable and its argument tuple to ``call``, BUILD the object and its
  state to ``build``, a persistent id to ``persistent``: the caller decides what each may do;
* INST, OBJ, NEWOBJ, extension codes, sets and out-of-band buffers are refused;
* dict keys are strings, bytes or integers (hashing them is linear in their size), items are
  set only on dicts and appended only to lists;
* every count is bounded: :data:`MAX_OPS` opcodes, :data:`MAX_TEXT` bytes of strings,
  :data:`MAX_INT_BYTES` bytes per integer, and no read past the end of the data.

Nothing in it recurses over what it built, so a pickle of lists that hold each other builds in
time linear in its length. Any refusal is :class:`MalformedPickle` with the opcode's position.
"""

from __future__ import annotations

import mmap
import pickle
import reprlib
import struct
from collections.abc import Callable
from typing import Any

MAX_OPS = 4_000_000
"""Opcodes one pickle may run: a state dict takes about 35 per tensor."""

MAX_TEXT = 64 << 20
"""Bytes of strings and bytes one pickle may hold, all together."""

MAX_INT_BYTES = 64
"""Bytes of one integer (LONG1, LONG4, INT, LONG): a state dict's are 8 at most, the legacy
format's magic number 10."""

_SIZES = {
    pickle.BINUNICODE: "<I",
    pickle.SHORT_BINUNICODE: "<B",
    pickle.BINUNICODE8: "<Q",
    pickle.BINSTRING: "<i",
    pickle.SHORT_BINSTRING: "<B",
    pickle.BINBYTES: "<I",
    pickle.SHORT_BINBYTES: "<B",
    pickle.BINBYTES8: "<Q",
}
"""The struct format of each string opcode's length (the opcodes: ``pickle``'s names)."""
_STRUCTS = {fmt: struct.Struct(fmt) for fmt in ("<B", "<H", "<i", "<I", "<Q")}

_LINE = 1024  # the longest text line (GLOBAL's names, INT, PUT's index)

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlevel = 3
_REPR.maxtuple = _REPR.maxlist = _REPR.maxdict = 8


def brief(value: Any) -> str:
    """A bounded ``repr`` of what a file holds (``reprlib``): an error message never expands a
    structure that refers to itself or to one object many times.

    >>> from rust_bertscore.convert.pickle_vm import brief
    >>> nested = []
    >>> for _ in range(40):
    ...     nested = [nested, nested]
    >>> brief(nested)
    '[[[[...], [...]], [[...], [...]]], [[[...], [...]], [[...], [...]]]]'
    """
    return _REPR.repr(value)


class MalformedPickle(Exception):
    """What a pickle holds or asks is not allowed; the reader turns it into a ``CheckpointError``
    that names the file."""


_KEY_TYPES = (str, bytes, int)
_REFUSED = {
    pickle.INST: "INST (an object built by calling a class)",
    pickle.OBJ: "OBJ (an object built by calling a class)",
    pickle.NEWOBJ: "NEWOBJ (an object built by cls.__new__)",
    pickle.NEWOBJ_EX: "NEWOBJ_EX (an object built by cls.__new__)",
    pickle.EXT1: "EXT1 (a registered extension)",
    pickle.EXT2: "EXT2 (a registered extension)",
    pickle.EXT4: "EXT4 (a registered extension)",
    pickle.EMPTY_SET: "EMPTY_SET",
    pickle.ADDITEMS: "ADDITEMS",
    pickle.FROZENSET: "FROZENSET",
    pickle.BYTEARRAY8: "BYTEARRAY8",
    pickle.NEXT_BUFFER: "NEXT_BUFFER",
    pickle.READONLY_BUFFER: "READONLY_BUFFER",
    pickle.STRING: "STRING (protocol 0's quoted string)",
}


class Machine:
    """Run one pickle of ``data`` from byte ``start`` (see the module docstring).

    Parameters
    ----------
    data
        The bytes (or a read-only ``mmap`` of a file holding several pickles).
    resolve
        ``(module, name) -> stand-in``; raises to refuse.
    call
        ``(callable, args) -> object`` for REDUCE.
    build
        ``(object, state) -> None`` for BUILD; raises to refuse.
    persistent
        ``(pid) -> object`` for BINPERSID and PERSID.

    Examples
    --------
    >>> import pickle
    >>> from rust_bertscore.convert.pickle_vm import Machine, MalformedPickle
    >>> def never(*args):
    ...     raise MalformedPickle("no globals here")
    >>> Machine(pickle.dumps({"a": [1, 2.5, None]}, 2), 0, never, never, never, never).run()
    {'a': [1, 2.5, None]}
    """

    def __init__(
        self,
        data: bytes | mmap.mmap,
        start: int,
        resolve: Callable[[str, str], Any],
        call: Callable[[Any, tuple], Any],
        build: Callable[[Any, Any], None],
        persistent: Callable[[Any], Any],
    ) -> None:
        self.data, self.pos, self.at = data, start, start
        self.resolve, self.call, self.build, self.persistent = resolve, call, build, persistent
        self.text_bytes = 0
        self.stack: list[Any] = []
        self.marks: list[int] = []

    # -- reading the data ------------------------------------------------------------------------
    def _take(self, count: int) -> bytes:
        if count < 0 or count > len(self.data) - self.pos:
            raise MalformedPickle(
                f"an argument of {count} bytes runs past the end of the data (truncated?)"
            )
        chunk = self.data[self.pos : self.pos + count]  # bytes, from bytes or an mmap
        self.pos += count
        return chunk

    def _text(self, count: int) -> bytes:
        self.text_bytes += max(count, 0)
        if self.text_bytes > MAX_TEXT:
            raise MalformedPickle(f"more than {MAX_TEXT} bytes of strings")
        return self._take(count)

    def _line(self) -> bytes:
        end = self.data.find(b"\n", self.pos, self.pos + _LINE)
        if end < 0:
            raise MalformedPickle(f"a text argument without its end of line in {_LINE} bytes")
        line = bytes(self.data[self.pos : end])
        self.pos = end + 1
        return line

    def _uint(self, fmt: str) -> int:
        (value,) = _STRUCTS[fmt].unpack(self._take(_STRUCTS[fmt].size))
        return int(value)

    def _long(self, count: int) -> int:
        if count > MAX_INT_BYTES:
            raise MalformedPickle(f"an integer of {count} bytes (at most {MAX_INT_BYTES})")
        return int.from_bytes(self._take(count), "little", signed=True)

    def _int_line(self) -> int:
        line = self._line().rstrip(b"L")
        if len(line) > 2 * MAX_INT_BYTES:
            raise MalformedPickle(f"an integer of {len(line)} digits")
        try:
            return int(line)
        except ValueError:
            raise MalformedPickle(f"not an integer: {brief(line)}") from None

    @staticmethod
    def _decode(raw: bytes, codec: str = "utf-8") -> str:
        try:
            return raw.decode(codec, "surrogatepass" if codec == "utf-8" else "strict")
        except UnicodeDecodeError:
            raise MalformedPickle(f"a string that is not {codec}: {brief(raw)}") from None

    # -- the stack -------------------------------------------------------------------------------
    def _pop(self, stack: list, marks: list[int]) -> Any:
        if len(stack) <= (marks[-1] if marks else 0):
            raise MalformedPickle("stack underflow")
        return stack.pop()

    @staticmethod
    def _pop_mark(stack: list, marks: list[int]) -> list:
        if not marks:
            raise MalformedPickle("no MARK to pop to")
        start = marks.pop()
        items = stack[start:]
        del stack[start:]
        return items

    @staticmethod
    def _key(key: Any) -> Any:
        if type(key) not in _KEY_TYPES:
            raise MalformedPickle(f"a dict key of type {type(key).__name__}: {brief(key)}")
        return key

    def _set_items(self, target: Any, items: list) -> None:
        if not isinstance(target, dict) or len(items) % 2:
            raise MalformedPickle(f"SETITEMS on a {type(target).__name__} ({len(items)} items)")
        for i in range(0, len(items), 2):
            target[self._key(items[i])] = items[i + 1]

    def run(self) -> Any:
        """Run the pickle to its STOP; the value it builds (:attr:`pos`: the byte after STOP)."""
        stack: list[Any] = []
        marks: list[int] = []
        self.stack, self.marks = stack, marks  # what was built so far, for error messages
        memo: dict[int, Any] = {}
        pop, data, end = self._pop, self.data, len(self.data)
        for _ in range(MAX_OPS):
            self.at = self.pos
            if self.pos >= end:
                raise MalformedPickle("the data ends before STOP (truncated?)")
            op = data[self.pos : self.pos + 1]
            self.pos += 1
            if op in (pickle.BINPUT, pickle.LONG_BINPUT, pickle.PUT, pickle.MEMOIZE):
                if op == pickle.BINPUT:
                    index = self._uint("<B")
                elif op == pickle.LONG_BINPUT:
                    index = self._uint("<I")
                else:
                    index = self._int_line() if op == pickle.PUT else len(memo)
                if not stack or index < 0:
                    raise MalformedPickle("PUT with an empty stack or a negative index")
                memo[index] = stack[-1]
            elif op in (pickle.BINGET, pickle.LONG_BINGET, pickle.GET):
                if op == pickle.BINGET:
                    index = self._uint("<B")
                else:
                    index = self._uint("<I") if op == pickle.LONG_BINGET else self._int_line()
                if index not in memo:
                    raise MalformedPickle(f"GET of memo entry {index}, which was never PUT")
                stack.append(memo[index])
            elif op == pickle.MARK:
                marks.append(len(stack))
            elif op in (pickle.BINUNICODE, pickle.SHORT_BINUNICODE, pickle.BINUNICODE8):
                size = self._uint(_SIZES[op])
                stack.append(self._decode(self._text(size)))
            elif op in (pickle.BINSTRING, pickle.SHORT_BINSTRING):  # Python 2 str, read as UTF-8
                stack.append(self._decode(self._text(self._uint(_SIZES[op]))))
            elif op in (pickle.BINBYTES, pickle.SHORT_BINBYTES, pickle.BINBYTES8):
                stack.append(self._text(self._uint(_SIZES[op])))
            elif op == pickle.UNICODE:  # protocol 0
                stack.append(self._decode(self._line(), "raw-unicode-escape"))
            elif op == pickle.BININT:
                stack.append(self._uint("<i"))
            elif op == pickle.BININT1:
                stack.append(self._uint("<B"))
            elif op == pickle.BININT2:
                stack.append(self._uint("<H"))
            elif op == pickle.LONG1:
                stack.append(self._long(self._uint("<B")))
            elif op == pickle.LONG4:
                stack.append(self._long(self._uint("<i")))
            elif op in (pickle.INT, pickle.LONG):  # protocol 0; INT 00 and 01 are False and True
                value = self._int_line()
                stack.append(bool(value) if op == pickle.INT and value in (0, 1) else value)
            elif op == pickle.BINFLOAT:
                stack.append(struct.unpack(">d", self._take(8))[0])
            elif op == pickle.FLOAT:
                try:
                    stack.append(float(self._line()))
                except ValueError:
                    raise MalformedPickle("FLOAT that is not a number") from None
            elif op == pickle.NONE:
                stack.append(None)
            elif op in (pickle.NEWTRUE, pickle.NEWFALSE):
                stack.append(op == pickle.NEWTRUE)
            elif op == pickle.EMPTY_TUPLE:
                stack.append(())
            elif op in (pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3):
                count = 1 if op == pickle.TUPLE1 else 2 if op == pickle.TUPLE2 else 3
                items = [pop(stack, marks) for _ in range(count)][::-1]
                stack.append(tuple(items))
            elif op == pickle.TUPLE:
                stack.append(tuple(self._pop_mark(stack, marks)))
            elif op == pickle.EMPTY_LIST:
                stack.append([])
            elif op == pickle.LIST:
                stack.append(self._pop_mark(stack, marks))
            elif op == pickle.EMPTY_DICT:
                stack.append({})
            elif op == pickle.DICT:
                target: dict = {}
                self._set_items(target, self._pop_mark(stack, marks))
                stack.append(target)
            elif op == pickle.APPEND:
                value = pop(stack, marks)
                if not stack or not isinstance(stack[-1], list):
                    raise MalformedPickle("APPEND to something that is not a list")
                stack[-1].append(value)
            elif op == pickle.APPENDS:
                items = self._pop_mark(stack, marks)
                if not stack or not isinstance(stack[-1], list):
                    raise MalformedPickle("APPENDS to something that is not a list")
                stack[-1].extend(items)
            elif op == pickle.SETITEM:
                value, key = pop(stack, marks), pop(stack, marks)
                self._set_items(stack[-1] if stack else None, [key, value])
            elif op == pickle.SETITEMS:
                items = self._pop_mark(stack, marks)
                self._set_items(stack[-1] if stack else None, items)
            elif op == pickle.GLOBAL:
                module = self._decode(self._line())
                stack.append(self.resolve(module, self._decode(self._line())))
            elif op == pickle.STACK_GLOBAL:
                name, module = pop(stack, marks), pop(stack, marks)
                if type(module) is not str or type(name) is not str:
                    raise MalformedPickle("STACK_GLOBAL of names that are not strings")
                stack.append(self.resolve(module, name))
            elif op == pickle.REDUCE:
                args, func = pop(stack, marks), pop(stack, marks)
                if type(args) is not tuple:
                    raise MalformedPickle(
                        f"REDUCE with arguments that are not a tuple: {brief(args)}"
                    )
                stack.append(self.call(func, args))
            elif op == pickle.BUILD:
                state = pop(stack, marks)
                if not stack:
                    raise MalformedPickle("BUILD with an empty stack")
                self.build(stack[-1], state)
            elif op == pickle.BINPERSID:
                stack.append(self.persistent(pop(stack, marks)))
            elif op == pickle.PERSID:
                stack.append(self.persistent(self._decode(self._line(), "ascii")))
            elif op == pickle.POP:
                if marks and len(stack) == marks[-1]:
                    marks.pop()
                else:
                    pop(stack, marks)
            elif op == pickle.POP_MARK:
                self._pop_mark(stack, marks)
            elif op == pickle.DUP:
                if not stack:
                    raise MalformedPickle("DUP with an empty stack")
                stack.append(stack[-1])
            elif op == pickle.PROTO:
                if self._uint("<B") > 5:
                    raise MalformedPickle("an unknown pickle protocol")
            elif op == pickle.FRAME:  # its length is only a hint
                self._take(8)
            elif op == pickle.STOP:
                result = pop(stack, marks)
                if stack or marks:
                    raise MalformedPickle("STOP with more than one value on the stack")
                return result
            elif op == pickle.INST:  # INST names a class: refuse it by name when it is not allowed
                module = self._decode(self._line())
                self.resolve(module, self._decode(self._line()))
                raise MalformedPickle(f"opcode {_REFUSED[op]} is refused")
            elif op in _REFUSED:
                raise MalformedPickle(f"opcode {_REFUSED[op]} is refused")
            else:
                raise MalformedPickle(f"unknown opcode {op!r}")
        raise MalformedPickle(f"more than {MAX_OPS} opcodes")
