import java.util.*;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.*;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.*;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacitySchedulerConfiguration;

public class Probe {
  static void utilHeartbeat(MockRM rm, MockNM nm, List<ContainerStatus> cs) throws Exception {
    java.lang.reflect.Field rid = MockNM.class.getDeclaredField("responseId"); rid.setAccessible(true);
    java.lang.reflect.Field ck = MockNM.class.getDeclaredField("currentContainerTokenMasterKey"); ck.setAccessible(true);
    java.lang.reflect.Field nk = MockNM.class.getDeclaredField("currentNMTokenMasterKey"); nk.setAccessible(true);
    int id = rid.getInt(nm);
    org.apache.hadoop.yarn.server.api.records.NodeHealthStatus hs = org.apache.hadoop.yarn.server.api.records.NodeHealthStatus.newInstance(true, "", System.currentTimeMillis());
    org.apache.hadoop.yarn.server.api.records.NodeStatus st = org.apache.hadoop.yarn.server.api.records.NodeStatus.newInstance(nm.getNodeId(), id, cs, new ArrayList<ApplicationId>(), hs,
        ResourceUtilization.newInstance(512, 0, 0.25f), ResourceUtilization.newInstance(2048, 0, 0.5f), null);
    org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatRequest req = org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatRequest.newInstance(st,
        (org.apache.hadoop.yarn.server.api.records.MasterKey) ck.get(nm), (org.apache.hadoop.yarn.server.api.records.MasterKey) nk.get(nm), null);
    org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatResponse resp = rm.getResourceTrackerService().nodeHeartbeat(req);
    rid.setInt(nm, resp.getResponseId());
  }

  public static void main(String[] argv) throws Exception {
    CapacitySchedulerConfiguration cs = new CapacitySchedulerConfiguration();
    cs.set("yarn.scheduler.capacity.root.queues", "default,a");
    cs.set("yarn.scheduler.capacity.root.default.capacity", "60");
    cs.set("yarn.scheduler.capacity.root.a.capacity", "40");
    cs.set("yarn.scheduler.capacity.root.a.maximum-capacity", "50");
    cs.set("yarn.scheduler.capacity.root.a.queues", "a1,a2");
    cs.set("yarn.scheduler.capacity.root.a.a1.capacity", "30");
    cs.set("yarn.scheduler.capacity.root.a.a2.capacity", "70");
    cs.set("yarn.scheduler.capacity.root.default.maximum-am-resource-percent", "1.0");
    YarnConfiguration conf = new YarnConfiguration(cs);
    conf.setBoolean("mockrm.webapp.enabled", true);
    conf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, "127.0.0.1:" + argv[0]);
    conf.set(YarnConfiguration.RM_SCHEDULER, "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler");
    MockRM rm = new MockRM(conf);
    rm.start();
    MockNM nm = rm.registerNode("127.0.0.1:1234", 8192, 8);
    MockNM nm2 = rm.registerNode("127.0.0.2:1234", 4096, 4);
    nm.nodeHeartbeat(true); nm2.nodeHeartbeat(true);
    // running app
    RMApp app1 = MockRMAppSubmitter.submit(rm, MockRMAppSubmissionData.Builder.createWithMemory(1024, rm)
        .withAppName("word count").withUser("user1").withQueue("default").withAppType("MAPREDUCE")
        .withApplicationTags(new HashSet<>(Arrays.asList("tag1", "tag2"))).build());
    MockAM am1 = MockRM.launchAndRegisterAM(app1, rm, nm);
    // finished app
    RMApp app2 = MockRMAppSubmitter.submit(rm, MockRMAppSubmissionData.Builder.createWithMemory(1024, rm)
        .withAppName("Sleep job").withUser("user2").withQueue("a1").build());
    MockAM am2 = MockRM.launchAndRegisterAM(app2, rm, nm);
    MockRM.finishAMAndVerifyAppState(app2, rm, nm, am2);
    // accepted app
    RMApp app3 = MockRMAppSubmitter.submit(rm, MockRMAppSubmissionData.Builder.createWithMemory(1024, rm)
        .withAppName("pending").withUser("user1").withQueue("a2").build());
    rm.drainEvents();
    ContainerId amc = app1.getCurrentAppAttempt().getMasterContainer().getId();
    utilHeartbeat(rm, nm, Collections.singletonList(ContainerStatus.newInstance(amc, ContainerState.RUNNING, "", 0)));
    utilHeartbeat(rm, nm2, Collections.emptyList());
    rm.drainEvents();
    System.out.println("READY " + app1.getApplicationId() + " " + app2.getApplicationId() + " " + app3.getApplicationId());
    System.out.flush();
    while (System.in.read() >= 0) { }
    rm.stop();
    System.exit(0);
  }
}
