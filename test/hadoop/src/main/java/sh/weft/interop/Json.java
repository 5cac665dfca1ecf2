package sh.weft.interop;

import java.util.Collection;
import java.util.Map;

/** Minimal JSON writer for one-line results the Go tests parse. */
final class Json {
  private Json() {}

  static String of(Map<String, ?> m) {
    StringBuilder b = new StringBuilder("{");
    for (Map.Entry<String, ?> e : m.entrySet()) {
      if (b.length() > 1) {
        b.append(',');
      }
      b.append(quote(e.getKey())).append(':').append(value(e.getValue()));
    }
    return b.append('}').toString();
  }

  private static String value(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Number || v instanceof Boolean) {
      return v.toString();
    }
    if (v instanceof Collection) {
      StringBuilder b = new StringBuilder("[");
      for (Object o : (Collection<?>) v) {
        if (b.length() > 1) {
          b.append(',');
        }
        b.append(value(o));
      }
      return b.append(']').toString();
    }
    return quote(v.toString());
  }

  private static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    return b.append('"').toString();
  }
}
