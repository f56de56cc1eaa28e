"""Request handlers of the sandbox; importing this package registers them all."""

from . import auth, cardstore, query, settlement, update  # noqa: F401
from .. import acs, threeds  # noqa: F401  (3-D Secure v1: THREEDQUERY, 3-D AUTH, the ACS pages)
from .. import engine, subscriptions  # noqa: F401  (AUTH SUBSCRIPTION and the subscription engine)
from .. import tokens  # noqa: F401,E402  (CACHETOKENISE, cachetoken AUTH, CORS, /js/st.js)
from .. import merchant  # noqa: F401,E402  (the demo merchant pages under /demo/merchant)
