/// Log levels of `mosquitto_log_callback_set`, as plain numbers.
public enum MosquittoLogLevel {
    public static let info: Int32 = 0x01
    public static let notice: Int32 = 0x02
    public static let warning: Int32 = 0x04
    public static let error: Int32 = 0x08
    public static let debug: Int32 = 0x10
}
