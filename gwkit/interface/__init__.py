"""The interface as data: fields, request types, card schemes, validation and masking."""

from .cards import SCHEMES, Scheme, luhn_complete, luhn_ok, payment_type_of, scheme_of
from .fields import BILLING_FIELDS, FIELDS, SENSITIVE_FIELDS, SUBSCRIPTION_FIELDS, Field
from .masking import mask_data, mask_pan, mask_text, mask_value
from .requests import FILTER_FIELDS, REQUEST_TYPES, UPDATABLE_FIELDS, RequestType, Variant
from .validation import Problem, check_value, errordata, validate_request, variants_for

__all__ = [
    "BILLING_FIELDS",
    "FIELDS",
    "FILTER_FIELDS",
    "REQUEST_TYPES",
    "SCHEMES",
    "SENSITIVE_FIELDS",
    "SUBSCRIPTION_FIELDS",
    "UPDATABLE_FIELDS",
    "Field",
    "Problem",
    "RequestType",
    "Scheme",
    "Variant",
    "check_value",
    "errordata",
    "luhn_complete",
    "luhn_ok",
    "mask_data",
    "mask_pan",
    "mask_text",
    "mask_value",
    "payment_type_of",
    "scheme_of",
    "validate_request",
    "variants_for",
]
