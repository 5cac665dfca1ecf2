package sh.weft.interop;

import java.util.HashMap;
import java.util.Map;

/** Parses --name value pairs. */
final class Args {
  private final Map<String, String> values = new HashMap<>();

  Args(String[] args) {
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --option, got " + args[i]);
      }
      values.put(args[i].substring(2), args[i + 1]);
    }
  }

  String get(String name, String def) {
    return values.getOrDefault(name, def);
  }

  int getInt(String name, int def) {
    return values.containsKey(name) ? Integer.parseInt(values.get(name)) : def;
  }
}
