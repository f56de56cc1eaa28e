"""Reports: the journal and TRANSACTIONQUERY results as typed pandas DataFrames, charts, export.

frame = gwkit.report.query_frame(gw.transaction_query(sitereference=gw.target.sitereference))
gwkit.report.amounts_by_day(frame)
gwkit.report.settlement_reconciliation(frame)      # per day: authorised, settled, refunded, net, pending
gwkit.report.declines_by_code(frame)               # failed payments per code, with the code table's meaning
gwkit.report.subscription_finance(*gwkit.report.subscriptions.subscription_portfolio(gw))  # MRR, churn
gwkit.report.accounting_view(frame, gw).export("exports", "accounts")   # money per currency, .xlsx and CSV
gwkit.report.find(gw, last4="1111")                      # support: by reference, card, email or name
gwkit.report.payment_view(gw, "48-9-1")                  # one payment and everything that happened to it
gwkit.report.export(frame, "exports", "transactions")    # any frame: CSV for Excel, .xlsx, Parquet
"""

from ..interface.codes import ERROR_CODES, SETTLE_STATUSES, ErrorCode, explain
from ..interface.currency import exponent, to_major
from ..interface.vocabulary import VALUE_WORDS, labelled, settle_status_label, words_for
from .accounting import AccountingView, accounting_view
from .charts import amounts_by_day, amounts_by_day_table, decline_reasons, decline_reasons_table
from .display import for_people, show, show_tables_for_people
from .export import export, to_csv, to_parquet
from .finance import declines_by_code, plot_declines_by_code, plot_reconciliation, settlement_reconciliation
from .frames import ReportError, records_frame, report_kind
from .lookup import PaymentView, find, payment_view
from .sources import journal_frame, journal_records_frame, query_frame, transactions_frame
from .spreadsheet import to_xlsx
from .timing import ReportTime, report_time

__all__ = [
    "ERROR_CODES",
    "SETTLE_STATUSES",
    "VALUE_WORDS",
    "AccountingView",
    "ErrorCode",
    "PaymentView",
    "ReportError",
    "ReportTime",
    "accounting_view",
    "amounts_by_day",
    "amounts_by_day_table",
    "decline_reasons",
    "decline_reasons_table",
    "declines_by_code",
    "due_between",
    "explain",
    "exponent",
    "export",
    "find",
    "for_people",
    "journal_frame",
    "journal_records_frame",
    "labelled",
    "payment_view",
    "plot_declines_by_code",
    "plot_reconciliation",
    "plot_subscription_finance",
    "query_frame",
    "records_frame",
    "recurring_revenue",
    "report_kind",
    "report_time",
    "settle_status_label",
    "settlement_reconciliation",
    "show",
    "show_tables_for_people",
    "subscription_finance",
    "to_csv",
    "to_major",
    "to_parquet",
    "to_xlsx",
    "transactions_frame",
    "words_for",
]
from . import (
    cardstore,  # noqa: F401  (stored cards: gwkit.report.cardstore)
    subscriptions,  # noqa: F401  (subscriptions and their payments: gwkit.report.subscriptions)
)
from .subscriptions import due_between, plot_subscription_finance, recurring_revenue, subscription_finance
