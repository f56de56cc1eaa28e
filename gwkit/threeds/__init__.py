"""3-D Secure from the merchant's side: version 1's flow (`flow`), EMV 3-D Secure's (version 2,
`v2`), the term URL receiver both use (`receiver`), the v2 messages (`messages`: CReq, CRes, the
`threedresponse` JWT), and the reading of ACS pages for headless completion (`acs_page`)."""

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
from .messages import threedresponse_jwt
from .receiver import TermUrlReceiver, challenge_page, default_receiver, redirect_page
from .v2 import (
    BROWSER_DEFAULTS,
    CHALLENGE,
    CHALLENGE_OUTCOMES,
    METHOD,
    QUERY,
    SEND_AUTH,
    ThreeDSecureV2Flow,
)

__all__ = [
    "AUTHORISED",
    "AUTH_WITH_PARENT",
    "BROWSER_DEFAULTS",
    "CHALLENGE",
    "CHALLENGE_OUTCOMES",
    "METHOD",
    "OUTCOMES",
    "QUERY",
    "REDIRECT",
    "RESEND_OR_AUTH",
    "SEND_AUTH",
    "STANDARD_AUTH",
    "Outcome",
    "Step",
    "TermUrlReceiver",
    "ThreeDSecureError",
    "ThreeDSecureFlow",
    "ThreeDSecureV2Flow",
    "Verdict",
    "challenge_page",
    "default_receiver",
    "redirect_page",
    "threedresponse_jwt",
]
