"""One reader per format, a module each (named as the format's extension), each a function from
a source to its records or the problems with them; and which reader reads each format."""

from __future__ import annotations

from .atom import read_atom_records
from .bib import read_bib_records
from .csv import read_csv_records, read_tsv_records
from .json import read_json_records, read_jsonl_records
from .parquet import read_parquet_records
from .ris import read_ris_records, read_wos_records
from .txt import read_txt_records
from .xlsx import read_xlsx_records

READERS = {  # a decoded source (a file's text, or stdin)
    "txt": read_txt_records,
    "csv": read_csv_records,
    "tsv": read_tsv_records,
    "jsonl": read_jsonl_records,
    "json": read_json_records,
    "bib": read_bib_records,
    "ris": read_ris_records,
    "wos": read_wos_records,  # (a .txt file, or stdin, that is a Web of Science export)
    "atom": read_atom_records,
    "xml": read_atom_records,  # (an Atom feed, or refused)
}
PATH_READERS = {  # binary files, read from their path
    "parquet": read_parquet_records,
    "xlsx": read_xlsx_records,
}
