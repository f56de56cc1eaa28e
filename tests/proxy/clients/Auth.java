// A Java 17 application's integration through gwkit proxy: java.net.http.HttpClient, the JDK alone.
// Run as a single source file: `java Auth.java`. GATEWAY_URL is the proxy's base URL. It sends a
// valid AUTH, then an invalid one, and prints one line per answer; exit 0 when both are as the
// proxy promises, 1 otherwise. (No JSON library: the checks read the answers as text.)
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

public class Auth {
    static final String GATEWAY = System.getenv().getOrDefault("GATEWAY_URL", "http://127.0.0.1:8766");
    static final String USER = "java-shop@merchant.example";
    static final HttpClient CLIENT = HttpClient.newHttpClient();

    static String auth(String orderreference, String baseamount) {
        return "{\"alias\": \"" + USER + "\", \"version\": \"1.00\", \"request\": [{"
            + "\"requesttypedescriptions\": [\"AUTH\"], \"sitereference\": \"java_site_1\","
            + " \"accounttypedescription\": \"ECOM\", \"currencyiso3a\": \"GBP\","
            + " \"baseamount\": \"" + baseamount + "\", \"orderreference\": \"" + orderreference + "\","
            + " \"pan\": \"4111111111111111\", \"expirydate\": \"12/2030\", \"securitycode\": \"123\"}]}";
    }

    static HttpResponse<String> send(String envelope) throws Exception {
        String credentials = Base64.getEncoder()
            .encodeToString((USER + ":java-password").getBytes(StandardCharsets.UTF_8));
        HttpRequest request = HttpRequest.newBuilder(URI.create(GATEWAY + "/json/"))
            .header("Content-Type", "application/json")
            .header("Authorization", "Basic " + credentials)
            .POST(HttpRequest.BodyPublishers.ofString(envelope))
            .build();
        return CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
    }

    public static void main(String[] args) throws Exception {
        HttpResponse<String> valid = send(auth("java-1", "1050"));
        HttpResponse<String> invalid = send(auth("java-2", "10.50"));
        String problems = invalid.headers().firstValue("x-gwkit-problems").orElse("");
        System.out.println("valid " + valid.statusCode() + " " + valid.body());
        System.out.println("invalid " + invalid.statusCode() + " " + invalid.body());
        System.out.println("problems " + problems);
        boolean ok = valid.statusCode() == 200
            && valid.body().contains("\"errorcode\": \"0\"")
            && valid.headers().firstValue("x-gwkit-problems").isEmpty()
            && invalid.body().contains("\"errorcode\": \"30000\"")
            && problems.contains("\"object\": 0, \"field\": \"baseamount\"");
        System.exit(ok ? 0 : 1);
    }
}
