"""Parquet files, a batch of rows at a time, through pyarrow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from ..._version import install_hint
from ...errors import InputError
from ...text import MAX_ABSTRACT_CHARS
from ..abstracts import KEEP_ALL
from ..files import display_name
from ..records import Record, field_names, header_problem, kept_fields, note_export_names
from ..source import ReadOptions


def read_parquet_records(path: Path, options: ReadOptions, rows: list[int]) -> Iterator[Record | InputError]:
    """A Parquet file's rows, a batch at a time; ``rows[0]`` counts the rows seen."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        yield InputError("reading .parquet needs pyarrow", where=str(path), fix=install_hint("parquet"))
        return
    name = display_name(path)
    try:
        table = parquet.ParquetFile(path)
    except (OSError, ValueError) as error:
        yield InputError(f"not a readable Parquet file ({error})", where=name, fix="Leave it out.")
        return
    names = table.schema_arrow.names
    fields = field_names(names, options.columns)
    if problem := header_problem(names, options.columns, name):
        yield problem
        return
    note_export_names(fields, options, name)
    keep = options.columns.keep
    kept_names = (
        []
        if not keep
        else names
        if keep == KEEP_ALL
        else [n for n in names if n.lower() in {k.lower() for k in keep}]
    )
    read = list(dict.fromkeys([*fields.values(), *kept_names]))
    if same := next(
        (n for n in read if names.count(n) > 1), None
    ):  # (pyarrow reads such a column by index only)
        yield InputError(f"{names.count(same)} columns named {same!r}", where=name, fix="Rename all but one.")
        return
    for batch in _batches(table, read):
        if isinstance(batch, InputError):
            yield InputError(batch.what, where=name, fix=batch.fix)
            return
        if isinstance(batch, _Oversized):  # (refused before it is decoded)
            first, rows[0] = rows[0] + 1, rows[0] + batch.rows
            yield InputError(
                f"rows {first:,} to {rows[0]:,} (a row group): column {batch.column!r} declares "
                f"{batch.size:,} bytes, more than {batch.rows:,} text(s) of at most "
                f"{MAX_ABSTRACT_CHARS:,} characters can hold: not read",
                where=name,
                fix="Leave out the value over the limit, or the rows, with --skip-bad.",
            )
            continue
        options.report.bytes_read += batch.nbytes
        decoded = {column: _parquet_values(batch.column(column)) for column in read}
        values_of = {column: values for column, (values, _) in decoded.items()}
        for i in range(batch.num_rows):
            rows[0] += 1
            record = {role: values_of[column][i] for role, column in fields.items()}
            where = f"{name}:row {rows[0]}"
            if bad := next(((column, bad[i]) for column, (_, bad) in decoded.items() if i in bad), None):
                yield InputError(
                    f"not valid UTF-8 text in column {bad[0]!r} (byte {bad[1]})",
                    where=where,
                    fix="Parquet text is UTF-8: fix the value, or leave the row out with --skip-bad.",
                )
                continue
            if not isinstance(record["abstract"], str) and record["abstract"] is not None:
                yield InputError(f"{fields['abstract']!r} is not text", where=where, fix="Fill it in.")
                continue
            kept = kept_fields(((column, values_of[column][i]) for column in kept_names), keep)
            yield Record(record, rows[0], where, kept)


def _parquet_values(array) -> tuple[list, dict[int, int]]:
    """A Parquet column's values as Python objects, and the rows whose text is not valid
    UTF-8 (row -> offset of the first bad byte; their value None): a string column may hold
    any bytes, and one bad value must not cost the others."""
    try:
        return array.to_pylist(), {}
    except UnicodeDecodeError:
        import pyarrow

        binary = pyarrow.large_binary() if pyarrow.types.is_large_string(array.type) else pyarrow.binary()
        values: list = []
        bad: dict[int, int] = {}
        for row, raw in enumerate(array.view(binary).to_pylist()):
            try:
                values.append(None if raw is None else raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                values.append(None)
                bad[row] = error.start
        return values, bad


class _Oversized(NamedTuple):
    """A row group whose declared size shows a value over the limit: never decoded."""

    rows: int
    column: str
    size: int


MAX_VALUE_BYTES = 4 * MAX_ABSTRACT_CHARS  # (UTF-8 takes at most four bytes a character)


def _oversized(table, group: int, columns: list[str]) -> _Oversized | None:
    """Whether a row group declares (its metadata, before anything is decoded) more bytes in
    one of ``columns`` than its rows can hold within the limit: then one of its values is over
    it (a 110 KB file declaring a value of a billion characters took 4.8 GB to refuse)."""
    meta = table.metadata.row_group(group)
    for j in range(meta.num_columns):
        chunk = meta.column(j)
        if chunk.path_in_schema in columns and chunk.total_uncompressed_size > meta.num_rows * (
            MAX_VALUE_BYTES + 16
        ):
            return _Oversized(meta.num_rows, chunk.path_in_schema, chunk.total_uncompressed_size)
    return None


def _batches(table, columns: list[str]):
    """The record batches of a Parquet file, a row group at a time (one whose declared size
    shows a value over the limit: :class:`_Oversized`, not decoded); damaged data ends them
    with an error (its message's first line, printable)."""
    import pyarrow

    for group in range(table.num_row_groups):
        if oversized := _oversized(table, group, columns):
            yield oversized
            continue
        batches = table.iter_batches(columns=columns, row_groups=[group])
        while True:
            try:
                batch = next(batches, None)
            except (OSError, ValueError, pyarrow.ArrowException) as error:
                first = str(error).strip().split("\n")[0]
                reason = "".join(c if c.isprintable() else " " for c in first)[:200]
                yield InputError(f"damaged Parquet data ({reason})", fix="Leave it out.")
                return
            if batch is None:
                break
            yield batch
