"""dolsot rich output: figures and rich values of one cell.

Compiled into the binary and imported (as _dolsot_rich) only when a cell
gives something to show: pyplot was imported by the cell (or a toolbox),
the cell called display(), or its value has a _repr_*_ method or is a
pandas DataFrame.  A call that does none of these never imports this
module, and matplotlib is never imported here unless it already is.

Each display is {"data": {mime: text}, "metadata": {...}}; an image/png
payload is base64.  The bounds (dolsot(1), FIGURES AND RICH VALUES):
"""

import sys

MAX_DISPLAYS = 8            # displays (figures and values) per cell
MAX_SIDE = 2000             # pixels per side of a rendered figure
MAX_PNG = 2 << 20           # bytes of one PNG, before base64
MAX_TEXT = 100_000          # chars of one text/html or text/markdown form
FRAME_ROWS = 5              # head and tail rows of a DataFrame's compact form
FRAME_COLS = 20             # columns named in it
FRAME_WIDTH = 100           # chars of one of its lines

_displays = []              # this call's, in order
_warnings = []
_skipped = 0                # displays past MAX_DISPLAYS


def _b64(data):
    import binascii
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _add(data, metadata):
    global _skipped
    if len(_displays) >= MAX_DISPLAYS:
        _skipped += 1
        return
    _displays.append({"data": data, "metadata": metadata})


def _png_size(data):
    """(width, height) from a PNG's IHDR, or None."""
    if len(data) >= 24 and data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None


def _figure_png(fig):
    """The figure as PNG bytes at its own size (scaled down to MAX_SIDE),
    or None with a warning."""
    import io
    w, h = fig.get_size_inches()
    dpi = fig.dpi
    if max(w, h) * dpi > MAX_SIDE:
        dpi = MAX_SIDE / max(w, h)
    for _ in range(3):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        data = buf.getvalue()
        if len(data) <= MAX_PNG:
            return data
        dpi /= 2
    _warnings.append(f"warning: a figure was not shown: its PNG exceeds {MAX_PNG} bytes")
    return None


def _show_figure(fig):
    global _skipped
    if len(_displays) >= MAX_DISPLAYS:
        _skipped += 1
        data = None
    else:
        data = _render(fig)
    if data is not None:
        size = _png_size(data) or (0, 0)
        _add({"image/png": _b64(data), "text/plain": f"<Figure size {size[0]}x{size[1]}>"},
             {"width": size[0], "height": size[1]})
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.close(fig)
        except BaseException:
            pass


def _render(fig):
    try:
        data = _figure_png(fig)
    except BaseException as e:
        _warnings.append(f"warning: a figure could not be rendered: {type(e).__name__}: "
                         f"{str(e)[:200]}")
        data = None
    return data


def _is_figure(obj):
    mpl = sys.modules.get("matplotlib.figure")
    return mpl is not None and isinstance(obj, mpl.Figure)


def _capped(text, what):
    if not isinstance(text, str):
        return None
    if len(text) > MAX_TEXT:
        _warnings.append(f"warning: the value's {what} form was cut to {MAX_TEXT} "
                         f"of {len(text)} chars")
        return text[:MAX_TEXT]
    return text


def _repr_of(obj, method):
    try:
        fn = getattr(type(obj), method, None)
        return None if fn is None else getattr(obj, method)()
    except BaseException:
        return None


def _frame_text(df):
    """A DataFrame as a prompt can take it: shape, columns and dtypes, then
    the first and last rows."""
    rows, cols = df.shape
    head = [f"DataFrame: {rows} row{'s' if rows != 1 else ''} x "
            f"{cols} column{'s' if cols != 1 else ''}"]
    named = [f"{str(c)[:40]} ({df.dtypes.iloc[i]})" for i, c in enumerate(df.columns[:FRAME_COLS])]
    if named:
        more = f", ... {cols - FRAME_COLS} more" if cols > FRAME_COLS else ""
        head.append("columns: " + ", ".join(named) + more)
    if rows == 0:
        return "\n".join(head)
    part = df.iloc[:, :FRAME_COLS]
    if rows > 2 * FRAME_ROWS:
        body = part.head(FRAME_ROWS).to_string().splitlines()
        tail = part.tail(FRAME_ROWS).to_string().splitlines()[1:]
        body += ["..."] + tail
    else:
        body = part.to_string().splitlines()
    return "\n".join(head + [line[:FRAME_WIDTH] for line in body])


def frame_text(value):
    """The compact form of a pandas DataFrame, or None for anything else."""
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(value, pd.DataFrame):
        return None
    try:
        return _frame_text(value)
    except BaseException:
        return None


def _value_data(value, text, rich):
    """A value's MIME forms; text is its text/plain.  rich: also html and
    markdown (--json), else only what text mode can show (a PNG)."""
    data = {"text/plain": text}
    png = _repr_of(value, "_repr_png_")
    if isinstance(png, (bytes, bytearray)) and len(png) <= MAX_PNG:
        data["image/png"] = _b64(bytes(png))
    elif isinstance(png, (bytes, bytearray)):
        _warnings.append(f"warning: the value's PNG form was not shown: it exceeds "
                         f"{MAX_PNG} bytes")
    elif png is not None:
        _warnings.append(f"warning: the value's PNG form was not shown: _repr_png_ "
                         f"returned {type(png).__name__}, not bytes")
    if rich:
        for method, mime in (("_repr_html_", "text/html"),
                             ("_repr_markdown_", "text/markdown")):
            form = _capped(_repr_of(value, method), mime)
            if form is not None:
                data[mime] = form
    return data


def _metadata(data):
    if "image/png" in data:
        import binascii
        size = _png_size(binascii.a2b_base64(data["image/png"][:64])) or (0, 0)
        return {"width": size[0], "height": size[1]}
    return {}


def has_rich(value):
    """True when the value gives more than its repr."""
    t = type(value)
    return (any(getattr(t, m, None) is not None
                for m in ("_repr_html_", "_repr_markdown_", "_repr_png_"))
            or frame_text(value) is not None)


def show_value(value, text, rich):
    """The trailing value's display, when it has rich forms; a DataFrame's
    text/plain is its compact form."""
    data = _value_data(value, frame_text(value) or text, rich)
    if len(data) > 1:
        _add(data, _metadata(data))


def display(objs, rich):
    """display(obj, ...): a figure becomes a PNG (and is closed); any other
    value its MIME forms.  In text mode (rich False) a value without a PNG
    form is printed as the cell's own output would be."""
    for obj in objs:
        if _is_figure(obj):
            _show_figure(obj)
            continue
        text = frame_text(obj)
        if text is None:
            try:
                text = repr(obj)
            except BaseException as e:
                text = f"<unrepresentable {type(obj).__name__}: {type(e).__name__}>"
        data = _value_data(obj, text, rich)
        if not rich and "image/png" not in data:
            print(text)
            continue
        _add(data, _metadata(data))


def open_figures():
    """Render and close the figures pyplot holds at the end of the cell."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        nums = plt.get_fignums()
    except BaseException:
        return
    for num in nums:
        try:
            fig = plt.figure(num)
        except BaseException:
            continue
        _show_figure(fig)


def collect():
    """(displays, warning lines) of this call; the next call (of a live
    session's process, which runs many) starts with none."""
    global _skipped
    notes = list(_warnings)
    if _skipped:
        notes.append(f"warning: {_skipped} more display{'s' if _skipped != 1 else ''} "
                     f"not shown (at most {MAX_DISPLAYS} per cell)")
    out = list(_displays), notes
    _displays.clear()
    _warnings.clear()
    _skipped = 0
    return out
