// A Node 20 application's integration through gwkit proxy, with fetch and nothing else.
// GATEWAY_URL is the proxy's base URL. It sends a valid AUTH, then an invalid one, and prints
// one JSON line: what it got. Exit 0 when both answers are as the proxy promises, 1 otherwise.
const GATEWAY = process.env.GATEWAY_URL ?? "http://127.0.0.1:8766";
const user = "node-shop@merchant.example";
const authorization = "Basic " + Buffer.from(`${user}:node-password`).toString("base64");

function auth(fields) {
  return {
    requesttypedescriptions: ["AUTH"],
    sitereference: "node_site_1",
    accounttypedescription: "ECOM",
    currencyiso3a: "GBP",
    baseamount: "1050",
    pan: "4111111111111111",
    expirydate: "12/2030",
    securitycode: "123",
    ...fields,
  };
}

async function send(request) {
  const answer = await fetch(`${GATEWAY}/json/`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: authorization },
    body: JSON.stringify({ alias: user, version: "1.00", request: [request] }),
  });
  const problems = answer.headers.get("x-gwkit-problems");
  return { status: answer.status, body: await answer.json(), problems: problems && JSON.parse(problems) };
}

const valid = await send(auth({ orderreference: "node-1" }));
const invalid = await send(auth({ orderreference: "node-2", baseamount: "10.50" }));
const result = {
  valid: [valid.status, valid.body.response[0].errorcode, valid.problems],
  invalid: [invalid.status, invalid.body.response[0].errorcode, invalid.body.response[0].errordata],
  problems: invalid.problems,
};
console.log(JSON.stringify(result));
const ok =
  valid.body.response[0].errorcode === "0" &&
  valid.problems === null &&
  invalid.body.response[0].errorcode === "30000" &&
  invalid.problems.some((p) => p.object === 0 && p.field === "baseamount");
process.exit(ok ? 0 : 1);
