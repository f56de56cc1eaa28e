"""Reports: the journal and TRANSACTIONQUERY results as typed pandas DataFrames, charts, export."""

from .codes import ERROR_CODES, ErrorCode, explain
from .currency import exponent, to_major
from .frames import ReportError, records_frame, report_kind

__all__ = ["ERROR_CODES", "ErrorCode", "ReportError", "explain", "exponent", "records_frame",
           "report_kind", "to_major"]
