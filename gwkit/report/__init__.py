"""Reports: the journal and TRANSACTIONQUERY results as typed pandas DataFrames, charts, export.

    frame = gwkit.report.query_frame(gw.transaction_query(sitereference=gw.target.sitereference))
    gwkit.report.amounts_by_day(frame)
    gwkit.report.export(frame, "exports", "transactions")
"""

from .charts import amounts_by_day, amounts_by_day_table, decline_reasons, decline_reasons_table
from ..interface.codes import ERROR_CODES, SETTLE_STATUSES, ErrorCode, explain, settle_status_label
from ..interface.currency import exponent, to_major
from .export import export, to_csv, to_parquet
from .frames import ReportError, records_frame, report_kind
from .people import for_people, show, show_tables_for_people
from .sources import journal_frame, journal_records_frame, query_frame

__all__ = [
    "ERROR_CODES", "SETTLE_STATUSES", "ErrorCode", "ReportError", "amounts_by_day", "amounts_by_day_table",
    "decline_reasons", "decline_reasons_table", "explain", "export", "exponent", "for_people", "journal_frame",
    "journal_records_frame", "query_frame", "records_frame", "report_kind", "settle_status_label", "show",
    "show_tables_for_people", "to_csv", "to_major", "to_parquet",
]
from . import subscriptions  # noqa: E402,F401  (subscriptions and their payments: gwkit.report.subscriptions)
from . import cardstore  # noqa: E402,F401  (stored cards: gwkit.report.cardstore)
