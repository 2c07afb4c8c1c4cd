// Starts DynamoDB Local bound to 127.0.0.1 only (its own launcher has no option for the address and binds
// every interface). Same arguments as DynamoDB Local's ServerRunner; run by lakefs_mirror_devenv.dynamodb_local
// as a single source file: java -cp '<jars>/*' -Djava.library.path=<jars> LocalhostRunner.java -inMemory -port N
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LocalhostRunner {
    public static void main(String[] args) throws Exception {
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server server = (Server) field.get(proxy);
        for (Connector connector : server.getConnectors()) {
            ((ServerConnector) connector).setHost("127.0.0.1");
        }
        proxy.start();
        proxy.join();
    }
}
