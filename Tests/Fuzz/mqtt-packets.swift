// libFuzzer target: bytes from a broker through the plain-TCP client's packet
// reader (see README.md).

/// Every packet, and the error that ended the reading if one did.
private func readAll(_ bytes: [UInt8], pieces: Int) -> ([MQTTPacketReader.Packet], MQTTPacketReader.Malformed?) {
    var reader = MQTTPacketReader(maximumPacketLength: 4096)
    var packets: [MQTTPacketReader.Packet] = []
    var offset = 0
    repeat {
        let end = min(offset + pieces, bytes.count)
        reader.append(bytes[offset..<end])
        offset = end
        do {
            while let packet = try reader.next() { packets.append(packet) }
        } catch {
            return (packets, error)
        }
    } while offset < bytes.count
    return (packets, nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMQTTPackets(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    // The first byte chooses the size of the pieces the rest arrives in.
    let pieces = Int(data[0] % 16) + 1
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: count - 1))
    let whole = readAll(bytes, pieces: max(bytes.count, 1))
    let cut = readAll(bytes, pieces: pieces)
    if whole.0 != cut.0 || whole.1 != cut.1 {
        fatalError("the packets depend on how the bytes were cut: \(whole) against \(cut)")
    }
    for packet in whole.0 {
        guard case .publish(let topic, let payload, 0, let retain, nil) = packet else { continue }
        // A message the reader accepted, written by the encoder, reads back the same.
        var reader = MQTTPacketReader(maximumPacketLength: 4096)
        guard let encoded = try? MQTTPacket.publish(topic: topic, payload: payload, retain: retain) else {
            fatalError("a message read could not be written")
        }
        reader.append(encoded)
        guard (try? reader.next()) == packet, reader.pendingCount == 0 else {
            fatalError("a message written did not read back the same")
        }
    }
    return 0
}
