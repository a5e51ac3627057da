import java.io.IOException;

import org.apache.zookeeper.server.NIOServerCnxnFactory;
import org.apache.zookeeper.server.ZKDatabase;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * ZooKeeper's NIO connection factory, with the server's database created before the first connection is accepted
 * (pykbroker.testing.ZooKeeperProcess runs ZooKeeper with it when javac is at hand).
 *
 * ZooKeeper 3.8.4 listens on its client port before it creates its database. A client that connects in between (a
 * client reconnecting to a restarted server) is refused with "ZooKeeperServer not running", but closing its
 * connection throws a NullPointerException in ZooKeeperServer.removeCnxn (its zkDb is still null: ZOOKEEPER-5051,
 * unfixed in any release), so the socket is never closed: the client waits for the answer to its ConnectRequest
 * for a whole session timeout, and its session expires meanwhile. Only the moment the database object is created
 * changes: it is loaded from disk by startdata() exactly as before.
 */
public final class DatabaseFirstCnxnFactory extends NIOServerCnxnFactory {
    @Override
    public void startup(ZooKeeperServer zks, boolean startServer) throws IOException, InterruptedException {
        if (zks.getZKDatabase() == null) {
            zks.setZKDatabase(new ZKDatabase(zks.getTxnLogFactory()));
        }
        super.startup(zks, startServer);
    }
}
