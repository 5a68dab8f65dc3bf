import CMosquitto

/// The bridge from libmosquitto's C callbacks to the Swift handler: the handle's
/// user data points at one of these, retained by the client for its lifetime.
final class CallbackContext: Sendable {
    let handler: @Sendable (MosquittoEvent) -> Void

    init(handler: @escaping @Sendable (MosquittoEvent) -> Void) {
        self.handler = handler
    }

    static func from(_ pointer: UnsafeMutableRawPointer?) -> CallbackContext? {
        pointer.map { Unmanaged<CallbackContext>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Registers C trampolines; they capture nothing, as C function pointers must.
    static func install(on handle: OpaquePointer, api: MosquittoAPI) {
        api.connect_callback_set(handle) { _, user, code in
            CallbackContext.from(user)?.handler(.connected(code: code))
        }
        api.disconnect_callback_set(handle) { _, user, code in
            CallbackContext.from(user)?.handler(.disconnected(code: code))
        }
        api.subscribe_callback_set(handle) { _, user, messageID, count, granted in
            var qos: [Int32] = []
            if let granted, count > 0 {
                qos = Array(UnsafeBufferPointer(start: granted, count: Int(count)))
            }
            CallbackContext.from(user)?.handler(.subscribed(messageID: messageID, grantedQoS: qos))
        }
        api.publish_callback_set(handle) { _, user, messageID in
            CallbackContext.from(user)?.handler(.published(messageID: messageID))
        }
        api.message_callback_set(handle) { _, user, message in
            guard let message, let context = CallbackContext.from(user) else { return }
            let topic = message.pointee.topic.map { String(cString: $0) } ?? ""
            var payload: [UInt8] = []
            if let bytes = message.pointee.payload, message.pointee.payloadlen > 0 {
                payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.pointee.payloadlen)))
            }
            context.handler(.message(topic: topic, payload: payload, retained: message.pointee.retain))
        }
        api.log_callback_set(handle) { _, user, level, text in
            guard let text, let context = CallbackContext.from(user) else { return }
            context.handler(.log(level: level, text: String(cString: text)))
        }
    }
}
