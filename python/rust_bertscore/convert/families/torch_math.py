"""float32 ``pow`` as PyTorch's CPU kernel computes it, without torch: the rotary tables of the
remote-code families (nomic-bert, GTE "new", jina-v3) and of transformers' default RoPE start
from ``base ** (arange(0, dim, 2) / dim)`` in float32, and the float32 powers NumPy computes
(its SIMD ``power``) differ from torch's by up to 2 float32 steps, which shift every angle of a
long input (issue 59 item 5: angles 2.4e-4 rad off at position 8,191).

Torch's ``pow`` kernel (``cpu_kernel_vec``) runs its vectorised path, SLEEF's ``Sleef_powf16_u10``
(AVX-512; ``Sleef_powf8_u10`` on AVX2, the same algorithm, FMA build), on the elements before the
last ``n % 32`` and ``std::pow`` (libm ``powf``) on those last ones (AVX2 machines take SLEEF on
16 more of them when ``n % 32 >= 16``; no rotary head of 64, 128 or 256 has a tail).
:func:`sleef_powf` transcribes SLEEF's ``xpowf`` (``src/libm/sleefsimdsp.c``: ``logkf``,
``expkf``; ``src/common/df.h``: the double-float arithmetic with FMA) in NumPy float32
arithmetic, each fused multiply-add exact (:func:`_fma`): bitwise torch's on 64,000 random
inputs. The libm elements are the correctly rounded power, which glibc's ``powf`` gives but in
rare cases (one step). :func:`exp_float32` and :func:`log_float32` (new-impl's ``mixed_b``) are
correctly rounded too: torch takes MKL's there, which agrees but in rare cases.
"""

from __future__ import annotations

import numpy as np

from ...errors import CheckpointError

_F32 = np.float32
TORCH_VECTOR_BLOCK = 32
"""Elements per step of torch's vectorised loop on AVX-512 (two vectors of 16 float32); the
elements past the last whole step take the scalar ``std::pow``."""

_L2U = _F32(0.693145751953125)
_L2L = _F32(1.428606765330187045e-06)
_R_LN2 = _F32(1.442695040888963407359924681001892137426645954152985934135449406931)

_Pair = tuple[np.ndarray, np.ndarray]


def _f32(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once to float32 (an FMA instruction): the product is exact in
    float64, the sum rounded to odd in float64 then to float32 (no double rounding)."""
    p = _f32(a).astype(np.float64) * _f32(b).astype(np.float64)
    c64 = _f32(c).astype(np.float64)
    s = p + c64
    v = s - p
    err = (p - (s - v)) + (c64 - v)
    even = (s.view(np.int64) & 1) == 0
    toward = np.where(err > 0, np.inf, -np.inf)
    s = np.where((err != 0) & even, np.nextafter(s, toward), s)
    return s.astype(np.float32)


def _add2(x: np.ndarray, y: np.ndarray) -> _Pair:  # dfadd2_vf2_vf_vf
    s = x + y
    v = s - x
    return s, (x - (s - v)) + (y - v)


def _add2_pf(x: _Pair, y: np.ndarray) -> _Pair:  # dfadd2_vf2_vf2_vf
    s = x[0] + y
    v = s - x[0]
    t = (x[0] - (s - v)) + (y - v)
    return s, t + x[1]


def _add2_pp(x: _Pair, y: _Pair) -> _Pair:  # dfadd2_vf2_vf2_vf2
    s = x[0] + y[0]
    v = s - x[0]
    t = (x[0] - (s - v)) + (y[0] - v)
    return s, t + (x[1] + y[1])


def _add_pp(x: _Pair, y: _Pair) -> _Pair:  # dfadd_vf2_vf2_vf2 (|x| >= |y|)
    s = x[0] + y[0]
    return s, (((x[0] - s) + y[0]) + x[1]) + y[1]


def _add_fp(x: np.ndarray, y: _Pair) -> _Pair:  # dfadd_vf2_vf_vf2
    s = x + y[0]
    return s, ((x - s) + y[0]) + y[1]


def _mul_pf(x: _Pair, y: np.ndarray) -> _Pair:  # dfmul_vf2_vf2_vf
    s = x[0] * y
    return s, _fma(x[1], y, _fma(x[0], y, -s))


def _mul_pp(x: _Pair, y: _Pair) -> _Pair:  # dfmul_vf2_vf2_vf2
    s = x[0] * y[0]
    return s, _fma(x[0], y[1], _fma(x[1], y[0], _fma(x[0], y[0], -s)))


def _squ(x: _Pair) -> _Pair:  # dfsqu_vf2_vf2
    s = x[0] * x[0]
    return s, _fma(x[0] + x[0], x[1], _fma(x[0], x[0], -s))


def _div(n: _Pair, d: _Pair) -> _Pair:  # dfdiv_vf2_vf2_vf2
    one = _f32(1.0)
    t = one / d[0]
    s = n[0] * t
    u = _fma(t, n[0], -s)
    v = _fma(-d[1], t, _fma(-d[0], t, one))
    return s, _fma(s, v, _fma(n[1], t, u))


def _logk(d: np.ndarray) -> _Pair:
    """SLEEF's ``logkf`` (the AVX-512 branch: ``getexp``/``getmant``) for positive normal ``d``."""
    scaled = d * _f32(1.0 / 0.75)
    e = _f32(np.frexp(scaled)[1] - 1)  # getexp: floor(log2)
    frac, _ = np.frexp(d)  # d = frac * 2^k, frac in [0.5, 1)
    m = np.where(frac * 2 < 1.5, frac * 2, frac).astype(np.float32)  # getmant, [0.75, 1.5)
    x = _div(_add2(_f32(-1.0), m), _add2(_f32(1.0), m))
    x2 = _squ(x)
    t = _f32(0.240320354700088500976562)
    t = _fma(t, x2[0], _f32(0.285112679004669189453125))
    t = _fma(t, x2[0], _f32(0.400007992982864379882812))
    c = (_f32(0.66666662693023681640625), _f32(3.69183861259614332084311e-09))
    s = _mul_pf((_f32(0.69314718246459960938), _f32(-1.904654323148236017e-09)), e)
    s = _add_pp(s, (x[0] * _f32(2), x[1] * _f32(2)))
    return _add_pp(s, _mul_pp(_mul_pp(x2, x), _add2_pp(_mul_pf(x2, t), c)))


def _expk(d: _Pair) -> np.ndarray:
    """SLEEF's ``expkf`` (results in the normal range)."""
    q = np.rint((d[0] + d[1]) * _R_LN2)  # round half to even, as cvtps_epi32
    qf = q.astype(np.float32)
    s = _add2_pf(d, qf * -_L2U)
    s = _add2_pf(s, qf * -_L2L)
    total = s[0] + s[1]
    s = (total, (s[0] - total) + s[1])  # dfnormalize
    u = _f32(0.00136324646882712841033936)
    for coef in (
        0.00836596917361021041870117,
        0.0416710823774337768554688,
        0.166665524244308471679688,
        0.499999850988388061523438,
    ):
        u = _fma(u, s[0], _f32(coef))
    t = _add_pp(s, _mul_pf(_squ(s), u))
    t = _add_fp(_f32(1.0), t)
    out = np.ldexp(t[0] + t[1], q.astype(np.int64)).astype(np.float32)
    return np.where(d[0] < -104, _f32(0.0), out).astype(np.float32)


def sleef_powf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x ** y`` element-wise as SLEEF's ``powf_u10`` (FMA build) computes it, for positive
    finite ``x`` and finite ``y`` (the inputs of a rotary table).

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.convert.families.torch_math import sleef_powf
    >>> sleef_powf(np.float32([10000.0, 2.0, 1.0]), np.float32([0.5, 3.0, 0.7])).tolist()
    [100.0, 8.0, 1.0]
    """
    x, y = np.broadcast_arrays(_f32(x), _f32(y))
    if not (np.all(np.isfinite(x)) and np.all(x > 0) and np.all(np.isfinite(y))):
        raise CheckpointError(
            "a rotary base must be positive and finite (rope_theta / rotary_emb_base in "
            f"config.json), got {x.ravel()[:4].tolist()} to the powers {y.ravel()[:4].tolist()}"
        )
    with np.errstate(over="ignore", under="ignore"):
        logx = _logk(x)
        result = _expk(_mul_pf(logx, y))
    return np.where((y == 0) | (x == 1), _f32(1.0), result).astype(np.float32)


def libm_powf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x ** y`` in float32 correctly rounded (through float64), as glibc's ``powf`` gives it."""
    x64, y64 = _f32(x).astype(np.float64), _f32(y).astype(np.float64)
    return np.power(x64, y64).astype(np.float32)


def torch_pow(x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray:
    """``x ** y`` (float32, broadcast) as torch's CPU ``pow`` kernel computes it on an AVX-512
    machine, each row of the last axis one call: SLEEF on the whole blocks of
    :data:`TORCH_VECTOR_BLOCK` elements, libm on the rest. ``x`` and ``y`` are rounded to float32
    first, as torch casts a Python scalar to the tensor's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.convert.families.torch_math import torch_pow
    >>> exponents = np.arange(0, 64, 2, dtype=np.float32) / np.float32(64)
    >>> inv_freq = np.float32(1.0) / torch_pow(10000.0, exponents)
    >>> inv_freq.dtype, inv_freq.shape, float(inv_freq[0])
    (dtype('float32'), (32,), 1.0)
    """
    x, y = np.broadcast_arrays(_f32(x), _f32(y))
    n = x.shape[-1] if x.ndim else 1
    whole = n - n % TORCH_VECTOR_BLOCK
    out = np.array(libm_powf(x, y), dtype=np.float32)
    if whole:
        out[..., :whole] = sleef_powf(x[..., :whole], y[..., :whole])
    return out


def torch_pow_scalar(x: np.ndarray, exponent: float) -> np.ndarray:
    """``x ** exponent`` for a float32 tensor ``x`` and a Python number, as torch computes it:
    its fast paths for the exponents 2, 3, -2 (products), 0.5 (``sqrt``), -0.5 (``1 / sqrt``)
    and -1 (``1 / x``), else :func:`torch_pow` with the exponent rounded to float32.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.convert.families.torch_math import torch_pow_scalar
    >>> torch_pow_scalar(np.float32([1.0, 2.0, 4.0]), 0.5).tolist()
    [1.0, 1.4142135381698608, 2.0]
    """
    x = _f32(x)
    one = _f32(1.0)
    fast = {
        2.0: lambda: x * x,
        3.0: lambda: x * x * x,
        -2.0: lambda: one / (x * x),
        0.5: lambda: np.sqrt(x),
        -0.5: lambda: one / np.sqrt(x),
        -1.0: lambda: one / x,
    }
    if float(exponent) in fast:
        return np.asarray(fast[float(exponent)](), dtype=np.float32)
    return torch_pow(x, _f32(exponent))


def exp_float32(x: np.ndarray) -> np.ndarray:
    """``exp`` of float32 values, correctly rounded (through float64). Torch's CPU ``exp`` (MKL's
    VML on the PyPI wheels) gives the same float32 but in rare cases one step apart; NumPy's own
    float32 ``exp`` is further off.

    Examples
    --------
    >>> import numpy as np
    >>> from rust_bertscore.convert.families.torch_math import exp_float32
    >>> exp_float32(np.float32([0.0, 1.0])).tolist()
    [1.0, 2.7182817459106445]
    """
    return np.exp(_f32(x).astype(np.float64)).astype(np.float32)


def log_float32(x: np.ndarray | float) -> np.ndarray:
    """``log`` of float32 values, correctly rounded (through float64), as :func:`exp_float32`.

    Examples
    --------
    >>> from rust_bertscore.convert.families.torch_math import log_float32
    >>> float(log_float32(1.0))
    0.0
    """
    return np.log(_f32(x).astype(np.float64)).astype(np.float32)
