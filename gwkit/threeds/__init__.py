"""3-D Secure version 1 from the merchant's side: the flow (`flow`), the term URL receiver
(`receiver`), and the reading of ACS pages for headless completion (`acs_page`)."""

from ..errors import ThreeDSecureError
from .flow import (
    AUTH_WITH_PARENT,
    AUTHORISED,
    OUTCOMES,
    REDIRECT,
    RESEND_OR_AUTH,
    STANDARD_AUTH,
    Outcome,
    Step,
    ThreeDSecureFlow,
    Verdict,
)
from .receiver import TermUrlReceiver, default_receiver, redirect_page

__all__ = [
    "AUTHORISED",
    "AUTH_WITH_PARENT",
    "OUTCOMES",
    "REDIRECT",
    "RESEND_OR_AUTH",
    "STANDARD_AUTH",
    "Outcome",
    "Step",
    "TermUrlReceiver",
    "ThreeDSecureError",
    "ThreeDSecureFlow",
    "Verdict",
    "default_receiver",
    "redirect_page",
]
