// A tiny Java shop and its end-to-end test (JDK only, one file), run under
// `gwkit checklist --auto -- java Shop.java`. The shop pays through the gateway at GATEWAY_URL (here
// the checklist's, GWKIT_CHECKLIST_URL); NAIVE=1 makes it retry blindly. Each test claims its step by
// name, so they may run in any order.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class Shop {
    static final String CHECKLIST = System.getenv("GWKIT_CHECKLIST_URL");
    static final String GATEWAY = System.getenv().getOrDefault("GATEWAY_URL", CHECKLIST);
    static final boolean NAIVE = "1".equals(System.getenv("NAIVE"));
    static final String AUTHORIZATION = "Basic " + Base64.getEncoder().encodeToString(
        "shop@example.com:any-password".getBytes(StandardCharsets.UTF_8));
    static final HttpClient HTTP = HttpClient.newHttpClient();

    // The gateway's last record, or null when no answer worth the name came (none, an error page, garbage).
    static Map<String, Object> send(String request) {
        String envelope = "{\"alias\": \"shop@example.com\", \"version\": \"1.00\", \"request\": [" + request + "]}";
        try {
            HttpResponse<String> answer = HTTP.send(
                HttpRequest.newBuilder(URI.create(GATEWAY + "/json/"))
                    .timeout(Duration.ofSeconds(2))
                    .header("Content-Type", "application/json")
                    .header("Authorization", AUTHORIZATION)
                    .POST(HttpRequest.BodyPublishers.ofString(envelope))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
            if (answer.statusCode() != 200) return null;
            Object records = ((Map<?, ?>) new Json(answer.body()).value()).get("response");
            List<?> list = (List<?>) records;
            @SuppressWarnings("unchecked")
            Map<String, Object> last = (Map<String, Object>) list.get(list.size() - 1);
            return last;
        } catch (Exception failed) {  // no answer, not JSON, not an envelope
            return null;
        }
    }

    static Map<String, Object> auth(String order) {
        return send("{\"sitereference\": \"test_shop12345\", \"requesttypedescriptions\": [\"AUTH\"], "
            + "\"accounttypedescription\": \"ECOM\", \"orderreference\": \"" + order + "\", "
            + "\"pan\": \"4000000000000721\", \"expirydate\": \"12/2030\", \"securitycode\": \"123\", "
            + "\"baseamount\": \"1050\", \"currencyiso3a\": \"GBP\"}");
    }

    static String code(Map<String, Object> record) {
        return record == null ? null : (String) record.get("errorcode");
    }

    static String pay(String order) {
        String code = code(auth(order));
        if ("0".equals(code) || "70000".equals(code)) return code;
        if (NAIVE) return code(auth(order));  // blindly, the same order again
        Map<String, Object> query = send("{\"requesttypedescriptions\": [\"TRANSACTIONQUERY\"], "
            + "\"filter\": {\"orderreference\": [{\"value\": \"" + order + "\"}]}}");
        if (query == null || !"0".equals(query.get("errorcode"))) return "unknown";  // ask again later
        for (Object found : (List<?>) query.getOrDefault("records", List.of())) {
            Map<?, ?> record = (Map<?, ?>) found;
            if ("AUTH".equals(record.get("requesttypedescription")) && "0".equals(record.get("errorcode"))) {
                return "0";  // made: never pay twice
            }
        }
        return code(auth(order));
    }

    static void claim(String step) throws Exception {
        HttpResponse<String> answer = HTTP.send(
            HttpRequest.newBuilder(URI.create(CHECKLIST + "/_checklist/steps/" + step))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
        if (answer.statusCode() != 200) {
            throw new IllegalStateException("claiming " + step + ": " + answer.statusCode() + " " + answer.body());
        }
    }

    // The shop's end-to-end tests, in an order of their own.
    public static void main(String[] args) throws Exception {
        for (String step : new String[] {"dropped-answer", "bank-error-made", "decline"}) {
            claim(step);
            System.out.println(step + ": the shop says " + pay("java-" + step));
        }
    }

    // Just enough JSON for a gateway answer: objects, arrays, strings, numbers, true, false, null.
    static final class Json {
        private final String text;
        private int at;

        Json(String text) {
            this.text = text;
        }

        Object value() {
            skip();
            char c = text.charAt(at);
            if (c == '{') return object();
            if (c == '[') return array();
            if (c == '"') return string();
            int start = at;
            while (at < text.length() && ",]} \n\r\t".indexOf(text.charAt(at)) < 0) at++;
            String word = text.substring(start, at);
            return switch (word) {
                case "true" -> Boolean.TRUE;
                case "false" -> Boolean.FALSE;
                case "null" -> null;
                default -> Double.valueOf(word);
            };
        }

        private Map<String, Object> object() {
            Map<String, Object> found = new LinkedHashMap<>();
            at++;
            skip();
            if (text.charAt(at) == '}') { at++; return found; }
            while (true) {
                skip();
                String name = string();
                skip();
                at++;  // :
                found.put(name, value());
                skip();
                if (text.charAt(at++) == '}') return found;
            }
        }

        private List<Object> array() {
            List<Object> found = new ArrayList<>();
            at++;
            skip();
            if (text.charAt(at) == ']') { at++; return found; }
            while (true) {
                found.add(value());
                skip();
                if (text.charAt(at++) == ']') return found;
            }
        }

        private String string() {
            StringBuilder found = new StringBuilder();
            at++;
            while (text.charAt(at) != '"') {
                char c = text.charAt(at++);
                if (c != '\\') { found.append(c); continue; }
                char escaped = text.charAt(at++);
                switch (escaped) {
                    case 'n' -> found.append('\n');
                    case 't' -> found.append('\t');
                    case 'r' -> found.append('\r');
                    case 'b' -> found.append('\b');
                    case 'f' -> found.append('\f');
                    case 'u' -> { found.append((char) Integer.parseInt(text.substring(at, at + 4), 16)); at += 4; }
                    default -> found.append(escaped);
                }
            }
            at++;
            return found.toString();
        }

        private void skip() {
            while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
        }
    }
}
