// A tiny Node shop and its end-to-end test, run under `gwkit checklist --auto -- node shop_test.mjs`.
// The shop pays through the gateway at GATEWAY_URL (here the checklist's, GWKIT_CHECKLIST_URL);
// NAIVE=1 makes it retry blindly. Each test claims its step by name, so they may run in any order.
const GATEWAY = process.env.GATEWAY_URL ?? process.env.GWKIT_CHECKLIST_URL;
const NAIVE = process.env.NAIVE === "1";
const AUTHORIZATION = "Basic " + btoa("shop@example.com:any-password");

async function send(request) {
  try {
    const answer = await fetch(`${GATEWAY}/json/`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: AUTHORIZATION },
      body: JSON.stringify({ alias: "shop@example.com", version: "1.00", request: [request] }),
      signal: AbortSignal.timeout(2000),
    });
    const records = answer.ok ? (await answer.json()).response : null;
    return Array.isArray(records) ? records.at(-1) : null; // null: no answer worth the name
  } catch {
    return null;
  }
}

function auth(order) {
  return send({
    sitereference: "test_shop12345", requesttypedescriptions: ["AUTH"], accounttypedescription: "ECOM",
    orderreference: order, pan: "4000000000000721", expirydate: "12/2030", securitycode: "123",
    baseamount: "1050", currencyiso3a: "GBP",
  });
}

async function pay(order) {
  const record = await auth(order);
  const code = record?.errorcode;
  if (code === "0" || code === "70000") return code;
  if (NAIVE) return (await auth(order))?.errorcode; // blindly, the same order again
  const query = await send({
    requesttypedescriptions: ["TRANSACTIONQUERY"], filter: { orderreference: [{ value: order }] },
  });
  if (!query || query.errorcode !== "0") return "unknown";
  const made = (query.records ?? []).some((r) => r.requesttypedescription === "AUTH" && r.errorcode === "0");
  return made ? "0" : (await auth(order))?.errorcode;
}

async function claim(step) {
  const answer = await fetch(`${process.env.GWKIT_CHECKLIST_URL}/_checklist/steps/${step}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: "{}",
  });
  if (!answer.ok) throw new Error(`claiming ${step}: ${answer.status} ${await answer.text()}`);
}

// The shop's end-to-end tests, in an order of their own.
for (const step of ["dropped-answer", "bank-error-made", "decline"]) {
  await claim(step);
  console.log(`${step}: the shop says ${await pay(`node-${step}`)}`);
}
