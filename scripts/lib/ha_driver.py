"""Drives a real Home Assistant against gate (scripts/ha-test does the setting up).

Runs with the Python of the pinned Home Assistant venv (it uses HA's own aiohttp).
Everything is on loopback. Each step prints one line; the first failure ends the
run with exit 1 and the tails of the logs.
"""
import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import aiohttp

ENV = os.environ
WORK = ENV["HA_WORK"]
HA_PORT = int(ENV["HA_PORT"])
BROKER_PORT = int(ENV["BROKER_PORT"])
HASS = ENV["HASS"]
GATE = ENV["GATE_BIN"]
GATE_CONFIG = ENV["GATE_CONFIG"]
TRIGGER_LOG = ENV["TRIGGER_LOG"]
BASE = f"http://127.0.0.1:{HA_PORT}"
CONFIG_DIR = os.path.join(WORK, "ha-config")
UNIQUE_IDS = {
    "button": "garden_gate_open",
    "binary_sensor": "garden_gate_relay",
    "sensor": "garden_gate_last_opening",
}
ENTITY_IDS = {
    "button": "button.garden_gate_open",
    "binary_sensor": "binary_sensor.garden_gate_relay",
    "sensor": "sensor.garden_gate_last_opening",
}


class Failed(Exception):
    pass


def say(text):
    print(f"ha-test: {text}", flush=True)


def activations():
    try:
        with open(TRIGGER_LOG) as f:
            return [line for line in f if line.strip()]
    except FileNotFoundError:
        return []


def tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except FileNotFoundError:
        return f"({path} missing)\n"


async def eventually(what, check, timeout=60.0, interval=0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval)
    raise Failed(f"{what}: not within {timeout:.0f} s (last: {last!r})")


class HomeAssistant:
    def __init__(self):
        self.process = None
        self.token = None
        self.session = None
        self.ws = None
        self.ws_id = 0

    def write_config(self):
        os.makedirs(os.path.join(CONFIG_DIR, ".storage"), exist_ok=True)
        # No default_config: only what the test needs. http on loopback only.
        with open(os.path.join(CONFIG_DIR, "configuration.yaml"), "w") as f:
            f.write(
                "homeassistant:\n"
                "  name: gate-ha-test\n"
                "  latitude: 0\n  longitude: 0\n  elevation: 0\n"
                "  unit_system: metric\n  time_zone: UTC\n  country: DE\n  currency: EUR\n"
                "http:\n"
                f"  server_host: 127.0.0.1\n  server_port: {HA_PORT}\n"
                "api:\n"
                "config:\n"
                "websocket_api:\n"
                "onboarding:\n"
                "logger:\n  default: warning\n  logs:\n    homeassistant.components.mqtt: debug\n"
            )
        # NOTES: before the first start, zeroconf/mDNS only on loopback.
        with open(os.path.join(CONFIG_DIR, ".storage", "core.network"), "w") as f:
            json.dump({"version": 1, "minor_version": 1, "key": "core.network",
                       "data": {"configured_adapters": ["lo"]}}, f)

    async def start(self):
        log = open(os.path.join(WORK, "ha.out"), "ab")
        self.process = subprocess.Popen(
            [HASS, "--config", CONFIG_DIR, "--skip-pip", "--log-no-color",
             "--log-file", os.path.join(WORK, "ha.log")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.session = aiohttp.ClientSession()

        async def up():
            if self.process.poll() is not None:
                raise Failed(f"Home Assistant exited with {self.process.returncode}")
            try:
                async with self.session.get(f"{BASE}/api/onboarding") as r:
                    return r.status in (200, 401)
            except aiohttp.ClientError:
                return False
        await eventually("Home Assistant answers on its HTTP port", up, timeout=300, interval=0.5)

    async def stop(self):
        if self.ws is not None:
            await self.ws.close()
            self.ws = None
        if self.session is not None:
            await self.session.close()
            self.session = None
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    async def onboard(self):
        client_id = f"{BASE}/"
        async with self.session.post(f"{BASE}/api/onboarding/users", json={
                "client_id": client_id, "name": "Gate Test", "username": "gatetest",
                "password": "gate-test-password", "language": "en"}) as r:
            if r.status != 200:
                raise Failed(f"onboarding user step: HTTP {r.status} {await r.text()}")
            code = (await r.json())["auth_code"]
        async with self.session.post(f"{BASE}/auth/token", data={
                "grant_type": "authorization_code", "code": code, "client_id": client_id}) as r:
            if r.status != 200:
                raise Failed(f"token: HTTP {r.status} {await r.text()}")
            self.token = (await r.json())["access_token"]

    async def login(self):
        """After a restart: a fresh token from the stored user."""
        client_id = f"{BASE}/"
        async with self.session.post(f"{BASE}/auth/login_flow", json={
                "client_id": client_id, "handler": ["homeassistant", None], "redirect_uri": client_id}) as r:
            flow = await r.json()
        async with self.session.post(f"{BASE}/auth/login_flow/{flow['flow_id']}", json={
                "client_id": client_id, "username": "gatetest", "password": "gate-test-password"}) as r:
            result = await r.json()
            if result.get("type") != "create_entry":
                raise Failed(f"login flow: {result}")
        async with self.session.post(f"{BASE}/auth/token", data={
                "grant_type": "authorization_code", "code": result["result"], "client_id": client_id}) as r:
            self.token = (await r.json())["access_token"]

    @property
    def headers(self):
        return {"Authorization": f"Bearer {self.token}"}

    async def rest(self, method, path, body=None):
        async with self.session.request(method, f"{BASE}{path}", json=body, headers=self.headers) as r:
            text = await r.text()
            if r.status >= 300:
                raise Failed(f"{method} {path}: HTTP {r.status} {text}")
            return json.loads(text) if text else None

    async def add_mqtt(self):
        flow = await self.rest("POST", "/api/config/config_entries/flow", {"handler": "mqtt", "show_advanced_options": False})
        for _ in range(4):
            if flow.get("type") == "create_entry":
                return
            if flow.get("type") == "menu":
                flow = await self.rest("POST", f"/api/config/config_entries/flow/{flow['flow_id']}", {"next_step_id": "broker"})
                continue
            if flow.get("type") == "form":
                flow = await self.rest("POST", f"/api/config/config_entries/flow/{flow['flow_id']}",
                                       {"broker": "127.0.0.1", "port": BROKER_PORT})
                continue
            break
        if flow.get("type") != "create_entry":
            raise Failed(f"MQTT config flow ended with {flow}")

    async def ws_call(self, message):
        if self.ws is None:
            self.ws = await self.session.ws_connect(f"{BASE}/api/websocket")
            hello = await self.ws.receive_json()
            assert hello["type"] == "auth_required", hello
            await self.ws.send_json({"type": "auth", "access_token": self.token})
            ok = await self.ws.receive_json()
            if ok["type"] != "auth_ok":
                raise Failed(f"websocket auth: {ok}")
        self.ws_id += 1
        await self.ws.send_json({"id": self.ws_id, **message})
        while True:
            reply = await self.ws.receive_json(timeout=30)
            if reply.get("id") == self.ws_id and reply.get("type") == "result":
                if not reply.get("success"):
                    raise Failed(f"websocket {message}: {reply}")
                return reply["result"]

    async def gate_device(self):
        devices = await self.ws_call({"type": "config/device_registry/list"})
        for device in devices:
            if ["mqtt", "gate_garden_gate"] in device.get("identifiers", []):
                return device
        return None

    async def gate_entities(self, device_id):
        entities = await self.ws_call({"type": "config/entity_registry/list"})
        return [e for e in entities if e.get("device_id") == device_id]

    async def state(self, entity_id):
        try:
            return (await self.rest("GET", f"/api/states/{entity_id}"))
        except Failed:
            return None


def gate_daemon():
    log = open(os.path.join(WORK, "daemon.log"), "ab")
    return subprocess.Popen([GATE, "daemon", "--config", GATE_CONFIG], stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def daemon_log():
    return tail(os.path.join(WORK, "daemon.log"), 400)


async def main():
    ha = HomeAssistant()
    daemon = None
    try:
        ha.write_config()
        started = time.monotonic()
        await ha.start()
        say(f"Home Assistant up in {time.monotonic() - started:.0f} s")
        await ha.onboard()
        await ha.add_mqtt()
        say("onboarded (user step only); MQTT integration added through the config flow")

        # A retained command left on the broker before the daemon starts.
        subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(BROKER_PORT), "-q", "1", "-r",
                        "-t", "gate/garden_gate/open", "-m", "PRESS"], check=True)
        daemon = gate_daemon()

        device = await eventually("the gate's device in HA's device registry", ha.gate_device, timeout=90)
        if device.get("name") != "Garden gate":
            raise Failed(f"device name {device.get('name')!r}")

        async def three():
            entities = await ha.gate_entities(device["id"])
            return entities if len(entities) == 3 else None
        entities = await eventually("three entities on the device", three)
        found = {e["entity_id"].split(".")[0]: e for e in entities}
        for domain, unique_id in UNIQUE_IDS.items():
            entity = found.get(domain)
            if entity is None or entity["unique_id"] != unique_id or entity["entity_id"] != ENTITY_IDS[domain]:
                raise Failed(f"{domain}: expected unique_id {unique_id} as {ENTITY_IDS[domain]}, got {entity}")
        say(f"device {device['id']} with {sorted(e['unique_id'] for e in entities)}")

        async def sensor_is(value):
            state = await ha.state(ENTITY_IDS["sensor"])
            return state if state and state["state"] == value else None
        await eventually("the retained command is refused (sensor refused)", lambda: sensor_is("refused"))
        await asyncio.sleep(1)
        if activations():
            raise Failed(f"a retained command triggered: {activations()}")
        subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(BROKER_PORT), "-q", "1", "-r", "-n",
                        "-t", "gate/garden_gate/open"], check=True)
        say("retained command before the start: refused, no activation")

        await ha.rest("POST", "/api/services/button/press", {"entity_id": ENTITY_IDS["button"]})
        state = await eventually("sensor success after HA's press", lambda: sensor_is("success"))
        await asyncio.sleep(1)
        if len(activations()) != 1:
            raise Failed(f"expected exactly one activation, got {activations()}")
        attributes = state["attributes"]
        if attributes.get("source") != "homeassistant" or attributes.get("adapter") not in ("udp", "mqtt"):
            raise Failed(f"sensor attributes {attributes}")
        say(f"press: one activation, sensor success ({attributes})")

        await ha.rest("POST", "/api/services/button/press", {"entity_id": ENTITY_IDS["button"]})
        await eventually("sensor refused after a press in the cooldown", lambda: sensor_is("refused"))
        await asyncio.sleep(1)
        if len(activations()) != 1:
            raise Failed(f"a press in the cooldown triggered: {activations()}")
        say("press in the cooldown: refused, no activation")

        daemon.send_signal(signal.SIGKILL)
        daemon.wait()

        async def all_unavailable():
            states = [await ha.state(e) for e in ENTITY_IDS.values()]
            return all(s and s["state"] == "unavailable" for s in states)
        await eventually("every entity unavailable after the daemon is killed", all_unavailable)
        say("daemon killed: entities unavailable (last will)")

        daemon = gate_daemon()

        async def all_available():
            states = [await ha.state(e) for e in ENTITY_IDS.values()]
            return all(s and s["state"] != "unavailable" for s in states)
        await eventually("entities available after the daemon restarts", all_available)
        say("daemon restarted: entities available")

        await ha.stop()
        ha = HomeAssistant()
        await ha.start()
        await ha.login()
        await eventually("entities back after Home Assistant restarts", all_available, timeout=120)
        # The restarted daemon announced the status file's last opening (refusals are not in it).
        await eventually("the sensor's state announced again", lambda: sensor_is("success"), timeout=60)
        say("Home Assistant restarted: device and states back")

        removal = subprocess.run([GATE, "homeassistant", "remove", "--config", GATE_CONFIG],
                                 capture_output=True, text=True)
        if removal.returncode != 0:
            raise Failed(f"gate homeassistant remove: exit {removal.returncode}\n{removal.stdout}{removal.stderr}")

        async def gone():
            return await ha.gate_device() is None
        await eventually("the device removed from HA", gone)
        say("gate homeassistant remove: the device is gone")
        say("PASS")
        return 0
    except (Failed, AssertionError, asyncio.TimeoutError) as failure:
        print(f"ha-test: FAIL: {failure}", file=sys.stderr)
        print("--- daemon log\n" + daemon_log(), file=sys.stderr)
        print("--- Home Assistant log\n" + tail(os.path.join(WORK, "ha.log"), 80), file=sys.stderr)
        return 1
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
        await ha.stop()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
